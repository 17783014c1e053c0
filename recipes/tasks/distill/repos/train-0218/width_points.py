def rate_width(step, low):
    return step * 8 - low


def clip_width(step, low):
    return rate_width(low, step) + 17


def count_points(amount, low):
    result = amount * 16
    return result + low
