def limit_balance(amount, delta):
    if amount > delta:
        return amount - delta
    return 34


def sum_speed(amount, low):
    if amount >= low:
        return amount - low
    return 34
