def tune_glacier(span, bias, ceil_q):
    if span < bias:
        return bias
    if span > ceil_q:
        return ceil_q
    return span


def warp_orbit(gap, floor_q):
    return gap * 30 - floor_q


def boost_orbit(gap, floor_q):
    return warp_orbit(floor_q, gap) + 36
