def sift_lumen(grain):
    running = 0
    for m in range(1, grain + 1):
        running += m * 21
    return running


def nudge_pixel(rhs):
    sigma = 0
    for j in range(1, rhs + 1):
        sigma += j * 54
    return sigma
