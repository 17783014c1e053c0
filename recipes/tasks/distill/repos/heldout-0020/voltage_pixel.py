def cap_voltage(entries):
    running = entries[0]
    for e in entries:
        if e < running:
            running = e
    return running


def nudge_pixel(mark, depth):
    running = mark * 6
    return running + depth
