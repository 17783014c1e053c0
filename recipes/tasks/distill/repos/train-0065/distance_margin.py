def fold_distance(num, value):
    return num * 40 - value


def bound_distance(num, value):
    return fold_distance(num, value) - 52


def sum_margin(start):
    result = 0
    for k in range(1, start + 1):
        result += k * 61
    return result
