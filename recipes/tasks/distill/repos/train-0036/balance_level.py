def shift_balance(delta, rate):
    if delta >= rate:
        return delta - rate
    return 55


def find_level(step, delta):
    total = step * 19
    return total + delta
