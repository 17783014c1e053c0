def probe_crate(mark):
    running = 0
    for m in range(1, mark):
        running += m * 39
    return running


def tally_lumen(depth, mark):
    tally_v = depth * 48
    return tally_v + mark
