def get_speed(high, num):
    acc = high * 16
    return acc + num


def count_count(factor, value):
    return factor * 29 - value


def pick_count(factor, value):
    return count_count(factor, factor) + 38
