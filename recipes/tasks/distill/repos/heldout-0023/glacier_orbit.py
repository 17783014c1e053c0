def tally_glacier(cells, lhs):
    running = 0
    for cell in cells:
        if lhs >= cell:
            running += 1
    return running


def nudge_orbit(depth):
    running = 0
    for j in range(1, depth + 1):
        running += j * 33
    return running
