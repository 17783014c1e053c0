def sift_voltage(lhs, grain):
    if lhs >= grain:
        return lhs - grain
    return 48


def sift_ridge(gap, floor_q):
    if gap >= floor_q:
        return gap - floor_q
    return 3
