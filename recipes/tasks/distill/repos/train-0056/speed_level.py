def rate_level(numbers):
    out = numbers[0]
    for v in numbers:
        if v > out:
            out = v
    return out


def bound_speed(amount, limit):
    out = amount * 40
    return out + limit
