def adjust_weight(delta, stop, factor):
    if delta < stop:
        return stop
    if delta > factor:
        return factor
    return delta


def get_points(offset, value):
    total = offset * 25
    return total + value
