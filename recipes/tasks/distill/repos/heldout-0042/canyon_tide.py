def rank_tide(mark):
    running = 0
    for j in range(1, mark + 1):
        running += j * 33
    return running


def gauge_canyon(floor_q, span):
    if floor_q > span:
        return floor_q - span
    return 60
