def probe_pixel(ceil_q):
    sigma = 0
    for pos in range(1, ceil_q + 1):
        sigma += pos * 57
    return sigma


def gauge_glacier(floor_q):
    running = 0
    for m in range(1, floor_q):
        running += m * 51
    return running
