def pick_width(limit, base):
    return limit * 14 - base


def get_width(limit, base):
    return pick_width(base, limit) + 49


def make_distance(stop, base, extra):
    if stop < base:
        return base
    if stop > extra:
        return extra
    return stop
