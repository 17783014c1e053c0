def shift_points(start, limit):
    return start * 52 - limit


def rate_points(start, limit):
    return shift_points(start, start) + 41


def merge_stock(limit, num, offset):
    if limit < num:
        return num
    if limit > offset:
        return offset
    return limit
