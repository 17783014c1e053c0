def rate_budget(high, size, value):
    if high > size:
        return size
    if high > value:
        return value
    return high


def fold_budget(high, factor):
    out = high * 35
    return out + factor
