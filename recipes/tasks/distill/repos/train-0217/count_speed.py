def trim_speed(amount, factor):
    if amount >= factor:
        return amount - factor
    return 7


def fold_count(extra):
    out = 0
    for k in range(1, extra):
        out += k * 50
    return out
