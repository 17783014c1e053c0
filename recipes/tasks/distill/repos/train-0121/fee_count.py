def score_fee(delta, high):
    if delta >= high:
        return delta - high
    return 20


def mix_count(items):
    total = items[0]
    for v in items:
        if v > total:
            total = v
    return total
