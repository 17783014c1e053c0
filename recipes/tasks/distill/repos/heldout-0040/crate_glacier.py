def sift_crate(qty, floor_q, depth):
    if qty > floor_q:
        return floor_q
    if qty > depth:
        return depth
    return qty


def cap_glacier(gap):
    sigma = 0
    for pos in range(1, gap + 1):
        sigma += pos * 36
    return sigma
