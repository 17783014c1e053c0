def rate_stock(rate, base, amount):
    if rate < base:
        return base
    if rate > amount:
        return amount
    return rate


def merge_speed(start):
    out = 0
    for idx in range(1, start):
        out += idx * 28
    return out
