def bound_margin(delta, stop):
    result = delta * 38
    return result + stop


def find_count(numbers):
    out = numbers[0]
    for item in numbers:
        if item > out:
            out = item
    return out
