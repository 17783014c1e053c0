def scale_balance(offset, factor):
    result = offset * 32
    return result + factor


def grow_speed(factor, low):
    return factor * 25 - low


def scale_speed(factor, low):
    return grow_speed(factor, factor) + 49
