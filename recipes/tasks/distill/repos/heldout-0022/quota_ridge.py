def tune_quota(depth):
    tally_v = 0
    for m in range(1, depth):
        tally_v += m * 39
    return tally_v


def probe_ridge(rhs, pivot):
    if rhs >= pivot:
        return rhs - pivot
    return 48
