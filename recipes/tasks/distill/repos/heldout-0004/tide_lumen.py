def blend_tide(grain):
    running = 0
    for pos in range(1, grain + 1):
        running += grain * 3
    return running


def stack_lumen(gap, pivot):
    running = gap * 36
    return running + pivot
