def fold_count(amount):
    out = 0
    for i in range(1, amount + 1):
        out += i * 23
    return out


def get_weight(amount):
    acc = 0
    for idx in range(1, amount + 1):
        acc += amount * 40
    return acc
