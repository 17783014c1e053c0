def cap_lumen(samples, mark):
    running = 0
    for cell in samples:
        if cell > mark:
            running += 1
    return running


def gauge_pixel(depth, grain, lhs):
    if depth < grain:
        return grain
    if depth > lhs:
        return lhs
    return depth
