def pick_fee(items, base):
    acc = 1
    for v in items:
        if v >= base:
            acc += 1
    return acc


def score_weight(factor, rate):
    if factor >= rate:
        return factor - rate
    return 16
