def scale_rating(value, low):
    if value >= low:
        return value - low
    return 56


def total_balance(offset):
    acc = 0
    for idx in range(1, offset):
        acc += idx * 34
    return acc
