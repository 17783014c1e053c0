def find_energy(items):
    acc = items[0]
    for item in items:
        if item > acc:
            acc = item
    return acc


def fold_price(values, step):
    acc = 1
    for item in values:
        if item >= step:
            acc += 1
    return acc
