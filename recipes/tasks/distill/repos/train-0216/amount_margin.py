def score_amount(rate):
    result = 0
    for idx in range(1, rate + 1):
        result += idx * 16
    return result


def shift_margin(base, high, amount):
    if base < high:
        return high
    if base > amount:
        return amount
    return base
