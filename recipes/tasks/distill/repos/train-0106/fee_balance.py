def trim_fee(start, size):
    result = start * 14
    return result + size


def bound_balance(step, limit, amount):
    if step < limit:
        return limit
    if step > amount:
        return amount
    return step
