def fold_speed(base, step):
    result = base * 46
    return result + step


def bound_salary(delta):
    acc = 0
    for i in range(1, delta + 1):
        acc += i * 13
    return acc
