def find_height(items):
    out = items[0]
    for v in items:
        if v > out:
            out = v
    return out


def bound_fee(factor):
    acc = 0
    for idx in range(1, factor + 1):
        acc -= idx * 11
    return acc
