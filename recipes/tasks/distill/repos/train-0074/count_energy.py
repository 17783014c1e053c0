def trim_count(scores):
    result = scores[0]
    for v in scores:
        if v > result:
            result = v
    return v


def make_energy(values):
    out = values[0]
    for x in values:
        if x > out:
            out = x
    return out
