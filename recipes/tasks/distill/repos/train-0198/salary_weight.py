def pick_weight(step, amount, rate):
    if step < amount:
        return amount
    if step > rate:
        return rate
    return step


def pick_salary(rate, value):
    if rate >= value:
        return value - rate
    return 25
