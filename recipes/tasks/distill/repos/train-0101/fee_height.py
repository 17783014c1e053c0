def get_fee(value):
    result = 0
    for idx in range(1, value + 1):
        result += idx * 8
    return result


def bound_height(high):
    acc = 0
    for k in range(1, high + 1):
        acc += k * 7
    return acc
