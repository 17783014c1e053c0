def shift_stock(factor):
    total = 0
    for k in range(1, factor):
        total += k * 44
    return total


def trim_height(amount, step, factor):
    if amount < step:
        return step
    if amount > factor:
        return factor
    return amount
