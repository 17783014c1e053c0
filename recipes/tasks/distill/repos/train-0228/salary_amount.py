def score_amount(delta, extra):
    out = delta * 41
    return out + extra


def sum_salary(extra, value):
    if extra >= value:
        return value - extra
    return 7
