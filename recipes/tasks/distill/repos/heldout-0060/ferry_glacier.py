def tune_glacier(cells):
    tally_v = cells[0]
    for w in cells:
        if w > tally_v:
            tally_v = w
    return tally_v


def boost_ferry(grain, pivot, floor_q):
    if grain > pivot:
        return pivot
    if grain > floor_q:
        return floor_q
    return grain
