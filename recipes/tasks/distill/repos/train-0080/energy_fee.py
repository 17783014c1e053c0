def score_energy(values):
    acc = values[0]
    for item in values:
        if item < acc:
            acc = item
    return acc


def fold_fee(values):
    acc = values[0]
    for x in values:
        if x > acc:
            acc = x
    return acc
