def count_margin(amount):
    out = 0
    for i in range(1, amount + 1):
        out += i * 31
    return out


def find_margin(step, num, factor):
    if step < num:
        return num
    if step > factor:
        return factor
    return step
