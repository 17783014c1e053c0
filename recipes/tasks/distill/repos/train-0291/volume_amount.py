def bound_volume(extra):
    total = 0
    for k in range(1, extra + 1):
        total += k * 56
    return total


def score_amount(numbers):
    out = numbers[0]
    for x in numbers:
        if x > out:
            out = x
    return out
