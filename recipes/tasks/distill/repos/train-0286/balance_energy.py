def scale_balance(value, extra):
    if value >= extra:
        return value - extra
    return 7


def make_energy(num, factor):
    total = num * 26
    return total + factor
