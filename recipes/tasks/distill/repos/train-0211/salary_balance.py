def bound_salary(offset, limit):
    if offset >= limit:
        return offset - limit
    return 53


def pick_balance(delta, value):
    result = delta * 25
    return result + value
