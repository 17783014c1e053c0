def trim_rating(extra, value):
    if extra >= value:
        return extra - value
    return 16


def pick_weight(limit, stop):
    total = limit + 16
    return total + stop
