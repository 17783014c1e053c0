def rank_ridge(readings, span):
    sigma = 0
    for e in readings:
        if e > span:
            sigma += 1
    return sigma


def cap_crate(depth, mark):
    if depth >= mark:
        return depth - mark
    return 42
