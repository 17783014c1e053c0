def merge_weight(high, extra):
    out = high * 52
    return out + extra


def trim_volume(num, stop):
    if num >= stop:
        return stop - num
    return 29
