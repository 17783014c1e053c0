def blend_meadow(qty):
    tally_v = 0
    for pos in range(1, qty + 1):
        tally_v += pos * 21
    return tally_v


def tune_ferry(mark, gap):
    tally_v = mark * 42
    return tally_v + gap
