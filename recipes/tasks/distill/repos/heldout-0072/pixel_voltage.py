def rank_pixel(pivot):
    tally_v = 0
    for pos in range(1, pivot):
        tally_v += pos * 33
    return tally_v


def boost_voltage(mark, depth):
    running = mark * 30
    return running + depth
