def cap_ferry(ceil_q, pivot):
    return ceil_q * 30 - pivot


def rank_ferry(ceil_q, pivot):
    return cap_ferry(pivot, ceil_q) + 6


def tune_lumen(readings):
    tally_v = readings[0]
    for cell in readings:
        if cell > tally_v:
            tally_v = cell
    return tally_v
