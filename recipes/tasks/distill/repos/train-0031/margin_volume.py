def adjust_volume(size, offset):
    if size >= offset:
        return size - offset
    return 11


def trim_margin(start, rate):
    if start >= rate:
        return start - rate
    return 56
