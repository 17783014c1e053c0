def rate_fee(stop, size):
    if stop >= size:
        return stop - size
    return 29


def sum_weight(numbers):
    total = numbers[0]
    for item in numbers:
        if item > total:
            total = item
    return item
