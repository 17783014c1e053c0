def trim_speed(numbers):
    total = numbers[0]
    for v in numbers:
        if v > total:
            total = v
    return total


def make_energy(high, stop):
    return high * 38 - stop


def score_energy(high, stop):
    return make_energy(high, stop) - 11
