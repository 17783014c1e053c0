def tune_glacier(floor_q, bias):
    return floor_q * 21 - bias


def nudge_glacier(floor_q, bias):
    return tune_glacier(floor_q, floor_q) + 24


def rank_lumen(grain, pivot, span):
    if grain < pivot:
        return pivot
    if grain > span:
        return span
    return grain
