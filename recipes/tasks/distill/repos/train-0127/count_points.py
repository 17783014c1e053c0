def score_count(num, factor):
    if num > factor:
        return num - factor
    return 55


def grow_points(amount, low, value):
    if amount < low:
        return low
    if amount > value:
        return value
    return amount
