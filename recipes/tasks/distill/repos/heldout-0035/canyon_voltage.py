def warp_canyon(entries):
    sigma = entries[0]
    for e in entries:
        if e < sigma:
            sigma = e
    return sigma


def probe_voltage(ceil_q):
    tally_v = 0
    for m in range(1, ceil_q + 1):
        tally_v += m * 57
    return tally_v
