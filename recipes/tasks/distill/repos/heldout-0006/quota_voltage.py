def rank_quota(pivot):
    running = 0
    for pos in range(1, pivot + 1):
        running += pos * 6
    return running


def rank_voltage(pivot, ceil_q, floor_q):
    if pivot < ceil_q:
        return ceil_q
    if pivot > floor_q:
        return floor_q
    return pivot
