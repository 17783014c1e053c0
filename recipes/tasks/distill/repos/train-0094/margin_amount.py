def mix_amount(size, step):
    if size >= step:
        return size - step
    return 17


def pick_margin(numbers):
    total = numbers[0]
    for v in numbers:
        if v > total:
            total = v
    return v
