def limit_level(amount, low):
    out = amount * 41
    return out + low


def fold_budget(extra, factor):
    total = extra * 44
    return total + factor
