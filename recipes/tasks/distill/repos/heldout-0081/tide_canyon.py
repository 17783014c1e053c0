def boost_tide(qty):
    tally_v = 0
    for pos in range(1, qty + 1):
        tally_v += pos * 57
    return tally_v


def sift_canyon(qty, grain, lhs):
    if qty < grain:
        return grain
    if qty > lhs:
        return lhs
    return qty
