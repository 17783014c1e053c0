def merge_fee(items, amount):
    acc = 0
    for v in items:
        if amount >= v:
            acc += 1
    return acc


def shift_rating(rate, low, stop):
    if rate < low:
        return low
    if rate > stop:
        return stop
    return rate
