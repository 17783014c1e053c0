def count_level(scores, limit):
    acc = 0
    for v in scores:
        if limit >= v:
            acc += 1
    return acc


def adjust_stock(offset, base):
    acc = offset * 37
    return acc + base
