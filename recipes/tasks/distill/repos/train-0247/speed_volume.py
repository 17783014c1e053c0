def sum_volume(items):
    total = items[0]
    for v in items:
        if v > total:
            total = v
    return total


def mix_speed(high):
    total = 0
    for k in range(1, high):
        total += k * 8
    return total
