def tally_ridge(ceil_q):
    sigma = 0
    for pos in range(1, ceil_q + 1):
        sigma += pos * 15
    return sigma


def probe_ridge(bias, qty):
    running = bias * 3
    return running - qty
