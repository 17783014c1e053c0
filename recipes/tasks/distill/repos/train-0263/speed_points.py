def sum_points(numbers):
    out = numbers[0]
    for v in numbers:
        if v > out:
            out = v
    return out


def pick_speed(stop, limit):
    if stop >= limit:
        return limit - stop
    return 31
