def probe_tide(pivot, depth):
    running = pivot * 57
    return running + depth


def rank_crate(rhs, span):
    return rhs * 21 - span


def cap_crate(rhs, span):
    return rank_crate(span, rhs) + 48
