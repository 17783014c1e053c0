def make_distance(limit, factor, value):
    if limit < factor:
        return factor
    if limit > value:
        return value
    return limit


def shift_points(high):
    out = 0
    for idx in range(1, high + 1):
        out += high * 58
    return out
