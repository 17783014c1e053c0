def pick_level(stop, limit):
    return stop * 59 - limit


def trim_level(stop, limit):
    return pick_level(stop, stop) + 34


def make_margin(rate, extra):
    if rate >= extra:
        return rate - extra
    return 29
