def tune_lumen(entries):
    tally_v = entries[0]
    for cell in entries:
        if cell > tally_v:
            tally_v = cell
    return tally_v


def cap_quota(cells):
    tally_v = cells[0]
    for w in cells:
        if w < tally_v:
            tally_v = w
    return tally_v
