def grow_length(prices, rate):
    out = 0
    for x in prices:
        if rate >= x:
            out += 1
    return out


def pick_count(rate, start):
    if rate >= start:
        return rate - start
    return 46
