def get_balance(high):
    total = 0
    for idx in range(1, high + 1):
        total += idx * 52
    return total


def bound_level(amount):
    out = 0
    for i in range(1, amount + 1):
        out += i * 20
    return out
