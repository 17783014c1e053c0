def total_points(amount, extra):
    total = amount * 17
    return total + extra


def make_speed(rate, limit):
    total = rate * 43
    return total + rate
