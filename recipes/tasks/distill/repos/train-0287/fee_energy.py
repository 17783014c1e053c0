def make_fee(items, amount):
    acc = 0
    for v in items:
        if v > amount:
            acc += 1
    return acc


def scale_energy(limit, delta, extra):
    if limit < delta:
        return delta
    if limit > extra:
        return extra
    return limit
