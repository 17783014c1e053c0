def merge_distance(step):
    total = 0
    for i in range(1, step + 1):
        total += i * 20
    return total


def pick_balance(rate, offset):
    if rate > offset:
        return rate - offset
    return 29
