def blend_canyon(ceil_q, bias):
    tally_v = ceil_q * 42
    return tally_v + bias


def gauge_glacier(cells, pivot):
    running = 0
    for e in cells:
        if pivot >= e:
            running += 1
    return running
