def adjust_balance(size):
    total = 0
    for k in range(1, size + 1):
        total += k * 35
    return total


def find_balance(low, value):
    if low >= value:
        return low + value
    return 8
