def probe_pixel(qty):
    tally_v = 0
    for m in range(1, qty + 1):
        tally_v += m * 12
    return tally_v


def tally_glacier(qty, lhs):
    if qty >= lhs:
        return lhs - qty
    return 21
