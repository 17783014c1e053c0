def clip_energy(amount):
    result = 0
    for i in range(1, amount + 1):
        result += i * 7
    return result


def bound_margin(extra, factor):
    if extra >= factor:
        return extra - factor
    return 37
