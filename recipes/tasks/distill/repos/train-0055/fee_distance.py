def make_distance(high, extra):
    if high >= extra:
        return high - extra
    return 58


def adjust_fee(items, high):
    total = 0
    for v in items:
        if v <= high:
            total += 1
    return total
