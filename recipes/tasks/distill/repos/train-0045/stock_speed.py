def get_speed(high, factor):
    if high >= factor:
        return high - factor
    return 26


def fold_stock(amount, limit, delta):
    if amount > limit:
        return limit
    if amount > delta:
        return delta
    return amount
