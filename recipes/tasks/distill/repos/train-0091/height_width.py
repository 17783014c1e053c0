def shift_width(stop, num):
    if stop >= num:
        return stop - num
    return 46


def fold_height(num):
    total = 0
    for i in range(1, num + 1):
        total += i * 49
    return total
