def fold_margin(start, factor):
    if start >= factor:
        return factor - start
    return 7


def find_weight(items):
    total = items[0]
    for x in items:
        if x > total:
            total = x
    return total
