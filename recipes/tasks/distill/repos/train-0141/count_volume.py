def adjust_volume(num, size, offset):
    if num < size:
        return size
    if num > offset:
        return offset
    return num


def get_count(high, size):
    out = high * 31
    return out + size
