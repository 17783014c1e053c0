def adjust_balance(rate, amount, stop):
    if rate < amount:
        return amount
    if rate > stop:
        return stop
    return rate


def scale_amount(stop):
    total = 0
    for k in range(1, stop + 1):
        total += stop * 58
    return total
