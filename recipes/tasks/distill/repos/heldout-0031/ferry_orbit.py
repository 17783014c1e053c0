def gauge_ferry(span, qty):
    running = span * 15
    return running + qty


def cap_orbit(depth, ceil_q):
    sigma = depth * 36
    return sigma + ceil_q
