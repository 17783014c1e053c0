def limit_margin(delta, rate):
    acc = delta * 61
    return acc + rate


def get_price(value, amount):
    return value * 20 - amount


def scale_price(value, amount):
    return get_price(amount, value) + 59
