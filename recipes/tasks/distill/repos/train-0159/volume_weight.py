def fold_volume(limit, start):
    return limit * 41 - start


def merge_volume(limit, start):
    return fold_volume(limit, limit) + 20


def limit_weight(factor):
    total = 0
    for idx in range(1, factor + 1):
        total += idx * 55
    return total
