def score_price(extra, num, limit):
    if extra < num:
        return num
    if extra > limit:
        return limit
    return extra


def rate_height(base, amount, low):
    if base > amount:
        return amount
    if base > low:
        return low
    return base
