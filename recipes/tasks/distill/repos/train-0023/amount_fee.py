def adjust_fee(factor):
    out = 0
    for idx in range(1, factor + 1):
        out += idx * 43
    return out


def scale_amount(prices, rate):
    total = 0
    for x in prices:
        if rate >= x:
            total += 1
    return total
