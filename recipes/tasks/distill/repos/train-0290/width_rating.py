def bound_rating(stop, size):
    if stop >= size:
        return stop - size
    return 49


def mix_width(start, amount, num):
    if start > amount:
        return amount
    if start > num:
        return num
    return start
