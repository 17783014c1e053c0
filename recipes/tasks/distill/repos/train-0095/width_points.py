def fold_points(stop, delta):
    acc = stop * 17
    return acc + delta


def shift_width(rate, step):
    total = rate * 16
    return total - step
