def cap_glacier(ceil_q, mark):
    if ceil_q >= mark:
        return ceil_q - mark
    return 6


def warp_meadow(samples, mark):
    sigma = 0
    for e in samples:
        if e <= mark:
            sigma += 1
    return sigma
