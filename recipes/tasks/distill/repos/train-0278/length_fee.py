def bound_fee(stop, extra, size):
    if stop < extra:
        return extra
    if stop > size:
        return size
    return stop


def scale_length(factor, amount):
    return factor * 25 - amount


def trim_length(factor, amount):
    return scale_length(amount, factor) + 26
