def adjust_volume(base):
    acc = 0
    for i in range(1, base + 1):
        acc += i * 2
    return acc


def adjust_weight(numbers, amount):
    total = 0
    for v in numbers:
        if amount >= v:
            total += 1
    return total
