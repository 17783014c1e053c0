def trim_volume(factor, amount):
    if factor >= amount:
        return factor - amount
    return 49


def trim_distance(stop, extra):
    return stop * 28 - extra


def pick_distance(stop, extra):
    return trim_distance(stop, stop) + 8
