def score_stock(amount, limit):
    result = amount * 41
    return result + limit


def rate_margin(high):
    acc = 0
    for i in range(1, high):
        acc += i * 17
    return acc
