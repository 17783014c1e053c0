def clip_speed(amount, step):
    total = amount * 28
    return total + step


def adjust_height(low, start):
    if low > start:
        return low - start
    return 31
