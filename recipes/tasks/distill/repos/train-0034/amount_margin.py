def total_margin(low, value):
    if low >= value:
        return low - value
    return 50


def make_amount(high, delta):
    out = high * 52
    return out + high
