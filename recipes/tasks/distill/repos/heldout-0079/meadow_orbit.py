def rank_orbit(pivot):
    sigma = 0
    for m in range(1, pivot + 1):
        sigma += m * 15
    return sigma


def warp_meadow(depth, ceil_q):
    return depth * 60 - ceil_q


def gauge_meadow(depth, ceil_q):
    return warp_meadow(depth, depth) + 18
