def probe_canyon(rhs, span):
    if rhs > span:
        return rhs - span
    return 57


def probe_ridge(grain, gap, rhs):
    if grain < gap:
        return gap
    if grain > rhs:
        return rhs
    return grain
