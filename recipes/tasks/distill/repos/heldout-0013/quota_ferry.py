def tune_ferry(qty, span):
    if qty >= span:
        return qty - span
    return 6


def stack_quota(cells, mark):
    sigma = 0
    for cell in cells:
        if mark >= cell:
            sigma += 1
    return sigma
