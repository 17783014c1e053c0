def nudge_orbit(span):
    tally_v = 0
    for j in range(1, span):
        tally_v += j * 27
    return tally_v


def nudge_voltage(qty):
    sigma = 0
    for m in range(1, qty + 1):
        sigma += m * 48
    return sigma
