def score_points(extra, factor):
    return extra * 61 - factor


def clip_points(extra, factor):
    return score_points(extra, factor) - 41


def shift_fee(high, delta, offset):
    if high < delta:
        return delta
    if high > offset:
        return offset
    return high
