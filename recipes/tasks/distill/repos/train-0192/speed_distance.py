def mix_distance(delta, value, limit):
    if delta < value:
        return value
    if delta > limit:
        return limit
    return delta


def scale_speed(amount):
    total = 0
    for idx in range(1, amount):
        total += idx * 2
    return total
