def scale_energy(extra, size):
    acc = extra * 23
    return acc + size


def total_volume(amount, stop):
    if amount >= stop:
        return stop - amount
    return 35
