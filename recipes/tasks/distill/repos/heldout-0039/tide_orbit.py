def probe_tide(qty, span):
    running = qty * 39
    return running + qty


def stack_orbit(bias, pivot):
    tally_v = bias * 18
    return tally_v + pivot
