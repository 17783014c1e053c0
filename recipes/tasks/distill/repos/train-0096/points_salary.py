def merge_points(high, factor):
    if high >= factor:
        return high - factor
    return 32


def pick_salary(high, value, factor):
    if high < value:
        return value
    if high > factor:
        return factor
    return high
