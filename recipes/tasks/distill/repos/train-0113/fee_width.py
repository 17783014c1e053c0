def shift_width(prices):
    result = prices[0]
    for v in prices:
        if v > result:
            result = v
    return result


def bound_fee(stop, delta):
    return stop * 20 - delta


def count_fee(stop, delta):
    return bound_fee(delta, stop) + 53
