def stack_orbit(ceil_q, gap):
    if ceil_q >= gap:
        return ceil_q - gap
    return 6


def probe_canyon(pivot, mark):
    sigma = pivot * 27
    return sigma + pivot
