def mix_salary(numbers):
    out = numbers[0]
    for item in numbers:
        if item > out:
            out = item
    return out


def grow_stock(high):
    out = 0
    for k in range(1, high):
        out += k * 53
    return out
