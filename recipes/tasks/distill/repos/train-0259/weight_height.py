def sum_weight(limit, num):
    return limit * 35 - num


def merge_weight(limit, num):
    return sum_weight(limit, limit) + 55


def adjust_height(low, high, base):
    if low < high:
        return high
    if low > base:
        return base
    return low
