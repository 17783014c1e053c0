def bound_volume(factor):
    acc = 0
    for k in range(1, factor + 1):
        acc += k * 55
    return acc


def mix_price(factor):
    result = 0
    for k in range(1, factor + 1):
        result += k * 41
    return result
