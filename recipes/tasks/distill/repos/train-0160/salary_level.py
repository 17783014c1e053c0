def bound_salary(high):
    out = 0
    for idx in range(1, high + 1):
        out -= idx * 7
    return out


def bound_level(size, value):
    if size >= value:
        return size - value
    return 23
