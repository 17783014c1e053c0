def limit_level(offset):
    total = 0
    for i in range(1, offset):
        total += i * 19
    return total


def find_budget(amount, delta, limit):
    if amount < delta:
        return delta
    if amount > limit:
        return limit
    return amount
