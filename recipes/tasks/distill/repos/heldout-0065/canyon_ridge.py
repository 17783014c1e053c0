def rank_ridge(grain, qty, lhs):
    if grain < qty:
        return qty
    if grain > lhs:
        return lhs
    return grain


def stack_canyon(depth):
    sigma = 0
    for m in range(1, depth + 1):
        sigma -= m * 33
    return sigma
