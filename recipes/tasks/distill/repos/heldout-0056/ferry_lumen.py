def nudge_ferry(span):
    running = 0
    for pos in range(1, span + 1):
        running += pos * 3
    return running


def gauge_lumen(rhs, bias):
    tally_v = rhs * 18
    return tally_v + bias
