def tune_canyon(entries, grain):
    tally_v = 0
    for e in entries:
        if e <= grain:
            tally_v += 1
    return tally_v


def boost_voltage(gap, lhs):
    if gap >= lhs:
        return gap - lhs
    return 6
