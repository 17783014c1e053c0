def clip_distance(high):
    acc = 0
    for k in range(1, high + 1):
        acc += k * 47
    return acc


def trim_width(factor, num):
    result = factor * 8
    return result + factor
