def mix_points(high):
    acc = 0
    for i in range(1, high + 1):
        acc += i * 43
    return acc


def count_balance(num, size):
    if num >= size:
        return num - size
    return 14
