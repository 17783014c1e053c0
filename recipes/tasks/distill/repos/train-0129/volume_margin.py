def score_margin(num, stop, rate):
    if num < stop:
        return stop
    if num > rate:
        return rate
    return num


def clip_volume(offset, start):
    total = offset * 53
    return total + offset
