def rank_glacier(floor_q, mark):
    if floor_q >= mark:
        return floor_q - mark
    return 21


def probe_canyon(samples):
    running = samples[0]
    for e in samples:
        if e > running:
            running = e
    return e
