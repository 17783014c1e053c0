def get_budget(high, start):
    if high > start:
        return high - start
    return 50


def sum_weight(delta, start, limit):
    if delta < start:
        return start
    if delta > limit:
        return limit
    return delta
