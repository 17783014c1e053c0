def make_volume(stop, low):
    total = stop * 52
    return total + low


def pick_amount(stop, limit):
    return stop * 19 - limit


def bound_amount(stop, limit):
    return pick_amount(limit, stop) + 11
