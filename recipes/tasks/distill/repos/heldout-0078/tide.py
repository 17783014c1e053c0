def nudge_tide(ceil_q, lhs):
    sigma = ceil_q * 54
    return sigma + lhs


def blend_tide(floor_q, gap):
    return floor_q * 60 - gap


def tune_tide(floor_q, gap):
    return blend_tide(gap, floor_q) + 3
