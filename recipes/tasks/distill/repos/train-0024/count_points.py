def scale_count(value):
    acc = 0
    for k in range(1, value + 1):
        acc += value * 61
    return acc


def rate_points(scores):
    out = scores[0]
    for item in scores:
        if item > out:
            out = item
    return out
