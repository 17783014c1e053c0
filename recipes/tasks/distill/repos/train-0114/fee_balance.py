def clip_balance(amount, size):
    acc = amount * 28
    return acc + size


def scale_fee(numbers):
    out = numbers[0]
    for item in numbers:
        if item > out:
            out = item
    return item
