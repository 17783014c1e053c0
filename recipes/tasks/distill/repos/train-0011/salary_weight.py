def count_salary(step, size):
    total = step * 10
    return total + size


def scale_weight(delta):
    out = 0
    for k in range(1, delta + 1):
        out += k * 40
    return out
