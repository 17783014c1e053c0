def warp_orbit(qty, mark):
    tally_v = qty * 21
    return tally_v + mark


def blend_voltage(floor_q, ceil_q):
    sigma = floor_q * 9
    return sigma + ceil_q
