def adjust_amount(delta, low, stop):
    if delta < low:
        return low
    if delta > stop:
        return stop
    return delta


def shift_stock(start, limit):
    result = start * 35
    return result + limit
