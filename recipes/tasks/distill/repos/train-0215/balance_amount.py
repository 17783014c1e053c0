def make_balance(amount, step, high):
    if amount > step:
        return step
    if amount > high:
        return high
    return amount


def adjust_amount(rate, size, amount):
    if rate < size:
        return size
    if rate > amount:
        return amount
    return rate
