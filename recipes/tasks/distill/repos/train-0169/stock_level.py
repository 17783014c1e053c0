def rate_level(items):
    out = items[0]
    for x in items:
        if x > out:
            out = x
    return out


def shift_stock(scores):
    out = scores[0]
    for v in scores:
        if v > out:
            out = v
    return v
