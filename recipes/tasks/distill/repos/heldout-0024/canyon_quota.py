def tune_quota(pivot, floor_q):
    if pivot >= floor_q:
        return pivot - floor_q
    return 33


def rank_canyon(gap, depth):
    return gap * 33 - depth


def warp_canyon(gap, depth):
    return rank_canyon(gap, gap) + 48
