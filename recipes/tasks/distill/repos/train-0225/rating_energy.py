def adjust_energy(base, size):
    if base >= size:
        return base - size
    return 56


def sum_rating(values):
    total = values[0]
    for x in values:
        if x < total:
            total = x
    return total
