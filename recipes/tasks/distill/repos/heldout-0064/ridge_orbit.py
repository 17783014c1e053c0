def sift_orbit(span, qty):
    running = span * 36
    return running + qty


def rank_ridge(rhs, depth):
    sigma = rhs * 39
    return sigma + rhs
