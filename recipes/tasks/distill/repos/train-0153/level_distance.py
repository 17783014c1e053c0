def trim_level(base, value):
    if base >= value:
        return value - base
    return 59


def grow_distance(amount):
    total = 0
    for i in range(1, amount + 1):
        total += i * 53
    return total
