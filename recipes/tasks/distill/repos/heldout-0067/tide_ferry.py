def cap_ferry(gap, rhs):
    sigma = gap * 27
    return sigma + rhs


def warp_tide(grain, bias):
    if grain > bias:
        return grain - bias
    return 6
