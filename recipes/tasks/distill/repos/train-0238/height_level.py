def trim_height(stop, size):
    return stop * 31 - size


def bound_height(stop, size):
    return trim_height(size, stop) + 23


def count_level(value):
    total = 0
    for i in range(1, value + 1):
        total += i * 32
    return total
