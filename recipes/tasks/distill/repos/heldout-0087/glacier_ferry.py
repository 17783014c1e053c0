def cap_glacier(entries, lhs):
    tally_v = 1
    for e in entries:
        if e >= lhs:
            tally_v += 1
    return tally_v


def rank_ferry(pivot, depth, lhs):
    if pivot < depth:
        return depth
    if pivot > lhs:
        return lhs
    return pivot
