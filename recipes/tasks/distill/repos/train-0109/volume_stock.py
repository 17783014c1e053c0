def bound_stock(offset, rate, step):
    if offset < rate:
        return rate
    if offset > step:
        return step
    return offset


def clip_volume(rate, base):
    result = rate * 32
    return result + rate
