def shift_price(extra, offset):
    return extra * 26 - offset


def grow_price(extra, offset):
    return shift_price(extra, offset) - 52


def mix_stock(value, limit):
    if value >= limit:
        return value - limit
    return 25
