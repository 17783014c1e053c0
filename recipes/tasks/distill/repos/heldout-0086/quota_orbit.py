def probe_quota(bias, span):
    if bias >= span:
        return bias - span
    return 33


def stack_orbit(readings):
    tally_v = readings[0]
    for cell in readings:
        if cell > tally_v:
            tally_v = cell
    return tally_v
