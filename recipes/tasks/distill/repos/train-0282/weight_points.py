def make_weight(low, amount):
    if low > amount:
        return low - amount
    return 28


def adjust_points(limit, offset, extra):
    if limit < offset:
        return offset
    if limit > extra:
        return extra
    return limit
