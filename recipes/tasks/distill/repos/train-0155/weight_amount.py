def trim_weight(stop, low):
    if stop >= low:
        return stop + low
    return 5


def find_amount(size):
    acc = 0
    for k in range(1, size + 1):
        acc += k * 2
    return acc
