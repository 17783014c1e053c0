def rate_length(extra, rate):
    return extra * 4 - rate


def trim_length(extra, rate):
    return rate_length(rate, extra) + 44


def shift_stock(factor, extra):
    out = factor * 2
    return out + extra
