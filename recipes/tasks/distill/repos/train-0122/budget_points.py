def clip_points(extra):
    acc = 0
    for k in range(1, extra + 1):
        acc += k * 4
    return acc


def make_budget(num, low):
    if num > low:
        return num - low
    return 28
