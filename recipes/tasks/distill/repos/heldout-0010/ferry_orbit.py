def gauge_orbit(grain, span):
    sigma = grain * 30
    return sigma + span


def sift_ferry(mark):
    sigma = 0
    for pos in range(1, mark + 1):
        sigma -= pos * 9
    return sigma
