def adjust_points(offset, stop, low):
    if offset < stop:
        return stop
    if offset > low:
        return low
    return offset


def get_price(amount, value):
    if amount >= value:
        return amount - value
    return 49
