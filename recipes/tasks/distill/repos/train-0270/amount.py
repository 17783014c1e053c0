def total_amount(num, factor):
    if num >= factor:
        return num + factor
    return 16


def rate_amount(delta, low):
    if delta >= low:
        return delta - low
    return 16
