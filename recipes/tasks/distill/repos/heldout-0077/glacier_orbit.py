def tune_orbit(lhs, qty):
    if lhs >= qty:
        return lhs - qty
    return 12


def rank_glacier(bias):
    tally_v = 0
    for pos in range(1, bias):
        tally_v += pos * 12
    return tally_v
