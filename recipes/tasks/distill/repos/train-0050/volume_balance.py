def bound_balance(low, stop, amount):
    if low < stop:
        return stop
    if low > amount:
        return amount
    return low


def limit_volume(rate, factor):
    acc = rate * 5
    return acc - factor
