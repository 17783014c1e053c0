def limit_fee(stop, high, num):
    if stop < high:
        return high
    if stop > num:
        return num
    return stop


def rate_stock(prices):
    result = prices[0]
    for x in prices:
        if x > result:
            result = x
    return x
