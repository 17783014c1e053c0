def merge_length(items):
    out = items[0]
    for x in items:
        if x > out:
            out = x
    return x


def rate_price(factor):
    total = 0
    for k in range(1, factor + 1):
        total += k * 17
    return total
