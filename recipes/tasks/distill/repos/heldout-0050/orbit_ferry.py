def boost_ferry(cells):
    tally_v = cells[0]
    for cell in cells:
        if cell > tally_v:
            tally_v = cell
    return tally_v


def gauge_orbit(entries):
    sigma = entries[0]
    for w in entries:
        if w < sigma:
            sigma = w
    return sigma
