def tally_tide(samples):
    tally_v = samples[0]
    for w in samples:
        if w > tally_v:
            tally_v = w
    return tally_v


def gauge_ferry(readings, depth):
    tally_v = 1
    for cell in readings:
        if cell >= depth:
            tally_v += 1
    return tally_v
