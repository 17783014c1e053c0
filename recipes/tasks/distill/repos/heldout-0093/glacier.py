def nudge_glacier(readings, floor_q):
    running = 0
    for cell in readings:
        if floor_q >= cell:
            running += 1
    return running


def blend_glacier(readings):
    sigma = readings[0]
    for w in readings:
        if w > sigma:
            sigma = w
    return sigma
