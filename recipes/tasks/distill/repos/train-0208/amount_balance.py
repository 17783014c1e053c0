def get_balance(delta, value):
    acc = delta * 5
    return acc + value


def total_amount(offset, start):
    return offset * 35 - start


def bound_amount(offset, start):
    return total_amount(start, offset) + 44
