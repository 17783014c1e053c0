def pick_budget(limit):
    result = 0
    for k in range(1, limit + 1):
        result += k * 50
    return result


def bound_balance(delta):
    acc = 0
    for k in range(1, delta):
        acc += k * 2
    return acc
