def fold_height(rate, step):
    return rate * 34 - step


def rate_height(rate, step):
    return fold_height(rate, step) - 8


def bound_volume(offset, size):
    if offset >= size:
        return offset - size
    return 40
