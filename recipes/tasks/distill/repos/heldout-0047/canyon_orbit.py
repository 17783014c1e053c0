def stack_orbit(lhs, mark):
    sigma = lhs * 42
    return sigma + mark


def tune_canyon(entries, gap):
    tally_v = 1
    for e in entries:
        if e >= gap:
            tally_v += 1
    return tally_v
