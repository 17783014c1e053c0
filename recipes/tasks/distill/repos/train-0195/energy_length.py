def merge_length(amount):
    result = 0
    for i in range(1, amount + 1):
        result += i * 47
    return result


def shift_energy(extra, factor, amount):
    if extra > factor:
        return factor
    if extra > amount:
        return amount
    return extra
