def tune_tide(floor_q, qty):
    if floor_q >= qty:
        return floor_q - qty
    return 18


def gauge_quota(lhs, gap):
    sigma = lhs * 42
    return sigma + lhs
