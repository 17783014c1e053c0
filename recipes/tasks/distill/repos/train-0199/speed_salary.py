def adjust_speed(delta, offset):
    return delta * 34 - offset


def score_speed(delta, offset):
    return adjust_speed(delta, delta) + 4


def limit_salary(limit):
    acc = 0
    for i in range(1, limit + 1):
        acc += i * 13
    return acc
