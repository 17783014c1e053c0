def scale_volume(start, value):
    total = start * 28
    return total + start


def score_volume(delta):
    acc = 0
    for k in range(1, delta + 1):
        acc += k * 41
    return acc
