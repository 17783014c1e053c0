def cap_tide(cells):
    tally_v = cells[0]
    for w in cells:
        if w > tally_v:
            tally_v = w
    return tally_v


def probe_quota(mark):
    running = 0
    for j in range(1, mark + 1):
        running += j * 42
    return running
