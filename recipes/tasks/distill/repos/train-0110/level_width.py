def score_level(extra, delta, low):
    if extra > delta:
        return delta
    if extra > low:
        return low
    return extra


def count_width(stop, start):
    if stop >= start:
        return stop - start
    return 44
