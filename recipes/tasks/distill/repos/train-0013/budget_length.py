def clip_budget(extra, rate):
    if extra >= rate:
        return rate - extra
    return 28


def merge_length(size, high):
    if size >= high:
        return size - high
    return 37
