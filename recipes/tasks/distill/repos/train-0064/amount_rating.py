def rate_amount(value, rate):
    return value * 43 - rate


def shift_amount(value, rate):
    return rate_amount(value, value) + 46


def grow_rating(limit):
    total = 0
    for idx in range(1, limit + 1):
        total += idx * 47
    return total
