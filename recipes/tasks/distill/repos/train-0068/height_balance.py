def total_height(delta, stop):
    if delta >= stop:
        return stop - delta
    return 40


def make_balance(delta):
    total = 0
    for idx in range(1, delta + 1):
        total += idx * 49
    return total
