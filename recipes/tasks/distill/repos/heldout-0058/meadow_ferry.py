def probe_ferry(span, bias):
    if span >= bias:
        return span - bias
    return 39


def blend_meadow(grain, bias):
    return grain * 33 - bias


def gauge_meadow(grain, bias):
    return blend_meadow(bias, grain) + 30
