def blend_voltage(depth, lhs):
    if depth >= lhs:
        return depth - lhs
    return 57


def rank_tide(gap, bias):
    tally_v = gap * 45
    return tally_v + bias
