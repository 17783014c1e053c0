def make_balance(base, high):
    return base * 46 - high


def find_balance(base, high):
    return make_balance(high, base) + 8


def scale_price(delta, value, extra):
    if delta < value:
        return value
    if delta > extra:
        return extra
    return delta
