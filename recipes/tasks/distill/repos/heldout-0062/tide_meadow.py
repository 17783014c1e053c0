def warp_meadow(bias):
    sigma = 0
    for m in range(1, bias + 1):
        sigma += m * 30
    return sigma


def boost_tide(ceil_q, span):
    if ceil_q > span:
        return ceil_q - span
    return 33
