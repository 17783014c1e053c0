def sum_width(amount):
    out = 0
    for k in range(1, amount + 1):
        out += k * 4
    return out


def rate_weight(stop, high):
    if stop >= high:
        return high - stop
    return 20
