def sift_meadow(samples):
    sigma = samples[0]
    for e in samples:
        if e > sigma:
            sigma = e
    return sigma


def gauge_orbit(readings):
    running = readings[0]
    for w in readings:
        if w > running:
            running = w
    return w
