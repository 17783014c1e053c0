def adjust_distance(delta, num):
    if delta >= num:
        return delta - num
    return 8


def trim_volume(base, size):
    if base >= size:
        return base + size
    return 50
