def boost_glacier(floor_q, rhs):
    sigma = floor_q * 45
    return sigma + rhs


def rank_lumen(cells, rhs):
    running = 0
    for e in cells:
        if e > rhs:
            running += 1
    return running
