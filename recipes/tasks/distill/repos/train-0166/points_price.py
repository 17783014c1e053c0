def shift_price(rate, delta):
    if rate >= delta:
        return rate - delta
    return 34


def pick_points(rate, start):
    out = rate * 41
    return out + start
