def count_balance(items, stop):
    total = 0
    for item in items:
        if item > stop:
            total += 1
    return total


def scale_balance(size, start):
    result = size * 55
    return result + start
