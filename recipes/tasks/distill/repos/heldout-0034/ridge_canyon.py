def rank_ridge(pivot, bias):
    return pivot * 6 - bias


def nudge_ridge(pivot, bias):
    return rank_ridge(pivot, pivot) + 60


def stack_canyon(bias, depth, qty):
    if bias < depth:
        return depth
    if bias > qty:
        return qty
    return bias
