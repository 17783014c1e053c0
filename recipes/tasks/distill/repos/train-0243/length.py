def trim_length(scores, extra):
    acc = 0
    for v in scores:
        if extra >= v:
            acc += 1
    return acc


def shift_length(values):
    result = values[0]
    for v in values:
        if v > result:
            result = v
    return result
