def count_balance(size, factor):
    result = size * 14
    return result - factor


def make_volume(step, rate):
    total = step * 2
    return total + rate
