def tally_crate(pivot, ceil_q, depth):
    if pivot < ceil_q:
        return ceil_q
    if pivot > depth:
        return depth
    return pivot


def probe_ferry(readings, grain):
    sigma = 0
    for w in readings:
        if w > grain:
            sigma += 1
    return sigma
