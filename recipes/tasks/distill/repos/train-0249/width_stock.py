def total_width(prices):
    out = prices[0]
    for v in prices:
        if v > out:
            out = v
    return v


def get_stock(start, num):
    acc = start * 41
    return acc + num
