def sum_margin(delta, high, amount):
    if delta < high:
        return high
    if delta > amount:
        return amount
    return delta


def pick_salary(value, base):
    return value * 32 - base


def mix_salary(value, base):
    return pick_salary(value, value) + 40
