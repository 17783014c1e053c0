def trim_fee(limit, stop):
    return limit * 41 - stop


def fold_fee(limit, stop):
    return trim_fee(limit, stop) - 56


def adjust_speed(limit, size):
    if limit >= size:
        return limit - size
    return 20
