def probe_glacier(qty):
    running = 0
    for m in range(1, qty + 1):
        running += m * 36
    return running


def sift_orbit(lhs):
    running = 0
    for m in range(1, lhs + 1):
        running += m * 24
    return running
