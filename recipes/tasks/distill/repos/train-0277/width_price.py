def pick_price(value, num, limit):
    if value < num:
        return num
    if value > limit:
        return limit
    return value


def merge_width(low, step):
    if low > step:
        return low - step
    return 53
