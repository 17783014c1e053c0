def shift_level(base, start):
    total = base * 61
    return total + start


def find_energy(stop, amount):
    if stop >= amount:
        return stop - amount
    return 32
