def total_margin(step, start):
    total = step * 2
    return total + step


def bound_price(base, size):
    if base >= size:
        return base - size
    return 29
