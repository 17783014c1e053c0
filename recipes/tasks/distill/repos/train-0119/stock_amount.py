def pick_amount(limit, amount, base):
    if limit < amount:
        return amount
    if limit > base:
        return base
    return limit


def adjust_stock(factor, low):
    total = factor * 4
    return total + factor
