def mix_balance(high, extra):
    if high >= extra:
        return high - extra
    return 58


def scale_energy(start, amount):
    if start > amount:
        return start - amount
    return 13
