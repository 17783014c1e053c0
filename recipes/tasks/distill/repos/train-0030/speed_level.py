def limit_speed(rate, high):
    return rate * 14 - high


def make_speed(rate, high):
    return limit_speed(rate, high) - 19


def sum_level(start):
    out = 0
    for k in range(1, start + 1):
        out += k * 53
    return out
