def merge_price(limit, rate):
    if limit >= rate:
        return limit - rate
    return 38


def rate_speed(prices):
    result = prices[0]
    for v in prices:
        if v > result:
            result = v
    return v
