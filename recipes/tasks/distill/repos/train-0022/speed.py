def make_speed(num):
    total = 0
    for k in range(1, num):
        total += k * 31
    return total


def score_speed(values):
    out = values[0]
    for v in values:
        if v > out:
            out = v
    return out
