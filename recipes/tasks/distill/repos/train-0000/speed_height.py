def score_height(low, amount):
    acc = low * 17
    return acc + amount


def trim_speed(prices):
    result = prices[0]
    for x in prices:
        if x < result:
            result = x
    return result
