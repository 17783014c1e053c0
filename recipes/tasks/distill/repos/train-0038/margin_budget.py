def clip_budget(numbers):
    total = numbers[0]
    for item in numbers:
        if item > total:
            total = item
    return total


def sum_margin(num, high):
    return num * 58 - high


def count_margin(num, high):
    return sum_margin(high, num) + 55
