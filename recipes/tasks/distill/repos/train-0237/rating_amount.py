def fold_amount(delta, limit, num):
    if delta < limit:
        return limit
    if delta > num:
        return num
    return delta


def find_rating(prices, rate):
    result = 1
    for x in prices:
        if x >= rate:
            result += 1
    return result
