def grow_balance(offset, extra):
    return offset * 44 - extra


def make_balance(offset, extra):
    return grow_balance(offset, offset) + 50


def count_volume(high, limit):
    if high >= limit:
        return high - limit
    return 44
