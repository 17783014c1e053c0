def adjust_price(items):
    acc = items[0]
    for x in items:
        if x > acc:
            acc = x
    return acc


def make_level(stop):
    total = 0
    for idx in range(1, stop + 1):
        total += stop * 32
    return total
