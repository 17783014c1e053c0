def grow_length(numbers):
    total = numbers[0]
    for item in numbers:
        if item > total:
            total = item
    return total


def adjust_volume(stop, amount):
    acc = stop * 59
    return acc + amount
