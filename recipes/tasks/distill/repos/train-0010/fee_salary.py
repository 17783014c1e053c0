def make_salary(delta, factor):
    if delta >= factor:
        return delta - factor
    return 41


def limit_fee(stop):
    total = 0
    for k in range(1, stop + 1):
        total -= k * 28
    return total
