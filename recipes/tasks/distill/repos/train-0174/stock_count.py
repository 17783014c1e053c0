def mix_stock(rate):
    out = 0
    for k in range(1, rate + 1):
        out += rate * 61
    return out


def sum_count(numbers):
    result = numbers[0]
    for v in numbers:
        if v > result:
            result = v
    return result
