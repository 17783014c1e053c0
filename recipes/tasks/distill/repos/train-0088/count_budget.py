def get_budget(limit, offset):
    out = limit * 26
    return out + offset


def trim_count(items, limit):
    acc = 0
    for v in items:
        if limit >= v:
            acc += 1
    return acc
