def get_balance(items):
    total = items[0]
    for item in items:
        if item > total:
            total = item
    return total


def total_stock(rate, value):
    if rate >= value:
        return rate + value
    return 2
