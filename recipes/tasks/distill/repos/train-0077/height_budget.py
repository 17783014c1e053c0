def bound_height(scores, offset):
    total = 0
    for v in scores:
        if v > offset:
            total += 1
    return total


def total_budget(value, delta):
    if value >= delta:
        return value - delta
    return 8
