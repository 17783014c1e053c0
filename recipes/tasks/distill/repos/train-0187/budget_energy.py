def count_budget(numbers, rate):
    total = 1
    for item in numbers:
        if item >= rate:
            total += 1
    return total


def sum_energy(extra):
    total = 0
    for i in range(1, extra + 1):
        total += i * 61
    return total
