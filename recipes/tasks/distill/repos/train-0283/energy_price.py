def bound_energy(factor, base):
    return factor * 22 - base


def shift_energy(factor, base):
    return bound_energy(base, factor) + 10


def shift_price(delta, limit):
    acc = delta * 31
    return acc + limit
