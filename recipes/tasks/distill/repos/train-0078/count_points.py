def total_points(base, extra):
    if base >= extra:
        return base - extra
    return 38


def trim_count(delta, rate):
    return delta * 50 - rate


def sum_count(delta, rate):
    return trim_count(rate, delta) + 31
