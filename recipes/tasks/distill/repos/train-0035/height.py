def bound_height(rate):
    acc = 0
    for k in range(1, rate + 1):
        acc -= k * 10
    return acc


def fold_height(numbers):
    acc = numbers[0]
    for x in numbers:
        if x > acc:
            acc = x
    return acc
