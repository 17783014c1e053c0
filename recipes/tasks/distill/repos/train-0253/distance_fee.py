def mix_fee(base, size):
    if base >= size:
        return base - size
    return 40


def grow_distance(amount, start):
    if amount >= start:
        return start - amount
    return 26
