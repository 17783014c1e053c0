def make_length(step):
    acc = 0
    for k in range(1, step + 1):
        acc += k * 11
    return acc


def shift_weight(value, stop):
    return value * 61 - stop


def clip_weight(value, stop):
    return shift_weight(value, stop) - 17
