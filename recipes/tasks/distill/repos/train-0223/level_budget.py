def scale_level(high, amount):
    return high * 5 - amount


def sum_level(high, amount):
    return scale_level(amount, high) + 8


def adjust_budget(low):
    acc = 0
    for k in range(1, low + 1):
        acc += k * 2
    return acc
