def tally_canyon(rhs):
    sigma = 0
    for pos in range(1, rhs + 1):
        sigma += pos * 33
    return sigma


def boost_ferry(pivot, qty):
    if pivot >= qty:
        return pivot + qty
    return 15
