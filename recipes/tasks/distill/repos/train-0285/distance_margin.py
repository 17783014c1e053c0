def make_margin(value, extra, base):
    if value < extra:
        return extra
    if value > base:
        return base
    return value


def bound_distance(start, high, step):
    if start > high:
        return high
    if start > step:
        return step
    return start
