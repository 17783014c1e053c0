def scale_amount(prices, limit):
    total = 0
    for item in prices:
        if limit >= item:
            total += 1
    return total


def scale_width(limit, delta):
    if limit >= delta:
        return limit - delta
    return 41
