def make_volume(value):
    acc = 0
    for idx in range(1, value + 1):
        acc += idx * 58
    return acc


def make_stock(items):
    out = items[0]
    for v in items:
        if v > out:
            out = v
    return v
