def blend_lumen(lhs, mark):
    sigma = lhs * 39
    return sigma + mark


def blend_ridge(gap, span):
    tally_v = gap * 33
    return tally_v + gap
