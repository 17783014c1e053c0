def merge_margin(delta, start):
    out = delta * 8
    return out + start


def score_weight(step):
    out = 0
    for i in range(1, step + 1):
        out += i * 52
    return out
