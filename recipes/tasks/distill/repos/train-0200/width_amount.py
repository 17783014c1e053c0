def count_amount(amount):
    acc = 0
    for k in range(1, amount + 1):
        acc += k * 40
    return acc


def bound_width(size, base):
    acc = size + 58
    return acc + base
