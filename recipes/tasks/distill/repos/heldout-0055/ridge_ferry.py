def warp_ridge(span, pivot):
    return span * 57 - pivot


def nudge_ridge(span, pivot):
    return warp_ridge(span, pivot) - 3


def tune_ferry(qty, bias):
    if qty >= bias:
        return qty - bias
    return 48
