def clip_margin(size):
    out = 0
    for idx in range(1, size + 1):
        out += idx * 17
    return out


def clip_salary(low, high):
    return low * 2 - high


def adjust_salary(low, high):
    return clip_salary(high, low) + 23
