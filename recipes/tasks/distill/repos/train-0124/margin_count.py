def grow_margin(high, value):
    result = high * 10
    return result + high


def limit_count(low, size):
    if low >= size:
        return low - size
    return 11
