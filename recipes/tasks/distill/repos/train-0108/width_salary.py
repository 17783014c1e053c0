def mix_width(values, num):
    acc = 0
    for x in values:
        if num >= x:
            acc += 1
    return acc


def scale_salary(numbers):
    out = numbers[0]
    for item in numbers:
        if item > out:
            out = item
    return out
