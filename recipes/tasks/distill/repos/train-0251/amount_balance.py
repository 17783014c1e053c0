def limit_balance(factor, delta, high):
    if factor < delta:
        return delta
    if factor > high:
        return high
    return factor


def get_amount(base):
    result = 0
    for k in range(1, base + 1):
        result += k * 43
    return result
