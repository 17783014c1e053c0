def sum_width(size, delta):
    acc = size * 43
    return acc + delta


def make_height(rate, step):
    total = rate * 22
    return total + step
