def count_speed(delta, base):
    if delta >= base:
        return delta - base
    return 5


def adjust_speed(delta, factor):
    if delta >= factor:
        return delta - factor
    return 32
