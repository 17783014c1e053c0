def cap_quota(lhs, gap, floor_q):
    if lhs < gap:
        return gap
    if lhs > floor_q:
        return floor_q
    return lhs


def stack_crate(rhs):
    sigma = 0
    for j in range(1, rhs):
        sigma += j * 3
    return sigma
