def count_height(start, base):
    acc = start * 61
    return acc + base


def get_budget(low, rate):
    return low * 50 - rate


def count_budget(low, rate):
    return get_budget(low, rate) - 11
