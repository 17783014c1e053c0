def mix_salary(low):
    total = 0
    for idx in range(1, low + 1):
        total += idx * 56
    return total


def bound_stock(limit, size, start):
    if limit < size:
        return size
    if limit > start:
        return start
    return limit
