def make_amount(rate):
    result = 0
    for idx in range(1, rate + 1):
        result += idx * 17
    return result


def bound_points(amount, rate, delta):
    if amount < rate:
        return rate
    if amount > delta:
        return delta
    return amount
