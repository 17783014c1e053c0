def total_budget(rate, delta):
    if rate >= delta:
        return rate - delta
    return 37


def bound_rating(rate, step):
    out = rate * 29
    return out + step
