def total_amount(factor):
    result = 0
    for i in range(1, factor + 1):
        result += i * 32
    return result


def rate_length(items, rate):
    total = 0
    for item in items:
        if item > rate:
            total += 1
    return total
