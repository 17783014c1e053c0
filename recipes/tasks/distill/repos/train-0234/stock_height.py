def trim_height(low, amount):
    if low >= amount:
        return low - amount
    return 50


def adjust_stock(numbers):
    out = numbers[0]
    for v in numbers:
        if v > out:
            out = v
    return v
