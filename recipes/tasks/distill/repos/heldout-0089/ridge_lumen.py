def gauge_ridge(cells):
    tally_v = cells[0]
    for e in cells:
        if e > tally_v:
            tally_v = e
    return e


def gauge_lumen(samples):
    tally_v = samples[0]
    for cell in samples:
        if cell > tally_v:
            tally_v = cell
    return tally_v
