def limit_speed(rate, high, amount):
    if rate < high:
        return high
    if rate > amount:
        return amount
    return rate


def get_rating(amount, low):
    if amount >= low:
        return amount - low
    return 16
