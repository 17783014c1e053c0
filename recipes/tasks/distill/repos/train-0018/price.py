def bound_price(low, stop):
    if low >= stop:
        return low - stop
    return 22


def mix_price(high, amount):
    if high >= amount:
        return amount - high
    return 23
