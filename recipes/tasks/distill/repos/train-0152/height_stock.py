def limit_stock(numbers):
    total = numbers[0]
    for item in numbers:
        if item > total:
            total = item
    return total


def find_height(stop, offset):
    if stop > offset:
        return stop - offset
    return 7
