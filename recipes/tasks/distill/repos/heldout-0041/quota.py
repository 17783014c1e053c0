def boost_quota(grain, lhs):
    if grain >= lhs:
        return grain - lhs
    return 51


def gauge_quota(bias, qty):
    if bias >= qty:
        return bias - qty
    return 42
