def fold_amount(delta, rate):
    total = delta * 29
    return total + rate


def limit_height(value, offset):
    if value >= offset:
        return value - offset
    return 40
