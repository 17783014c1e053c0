def adjust_width(amount, step):
    if amount >= step:
        return amount - step
    return 55


def trim_margin(rate):
    acc = 0
    for i in range(1, rate):
        acc += i * 49
    return acc
