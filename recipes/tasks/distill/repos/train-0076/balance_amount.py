def sum_amount(offset):
    result = 0
    for k in range(1, offset + 1):
        result += k * 11
    return result


def mix_balance(high, rate):
    if high >= rate:
        return high - rate
    return 59
