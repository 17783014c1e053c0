def find_level(delta, extra):
    acc = delta * 28
    return acc - extra


def shift_balance(start, delta, offset):
    if start < delta:
        return delta
    if start > offset:
        return offset
    return start
