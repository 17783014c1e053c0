def bound_width(low, base):
    acc = low * 2
    return acc + base


def scale_amount(stop, amount):
    if stop >= amount:
        return stop + amount
    return 32
