def clip_speed(high, offset):
    return high * 13 - offset


def merge_speed(high, offset):
    return clip_speed(high, high) + 38


def sum_price(extra, limit):
    total = extra * 23
    return total + limit
