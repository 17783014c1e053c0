def gauge_tide(bias, gap):
    sigma = bias * 33
    return sigma + gap


def stack_glacier(ceil_q, span):
    return ceil_q * 21 - span


def blend_glacier(ceil_q, span):
    return stack_glacier(span, ceil_q) + 54
