def tune_pixel(floor_q, mark):
    if floor_q >= mark:
        return floor_q - mark
    return 27


def boost_ridge(rhs, floor_q):
    return rhs * 15 - floor_q


def rank_ridge(rhs, floor_q):
    return boost_ridge(floor_q, rhs) + 36
