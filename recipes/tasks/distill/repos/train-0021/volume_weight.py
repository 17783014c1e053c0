def rate_weight(size, num):
    if size >= num:
        return size - num
    return 55


def merge_volume(stop, high):
    if stop >= high:
        return stop - high
    return 58
