def make_points(high, delta):
    if high > delta:
        return high - delta
    return 11


def score_salary(extra, base):
    if extra >= base:
        return extra - base
    return 46
