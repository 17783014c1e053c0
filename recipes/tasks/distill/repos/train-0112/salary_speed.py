def shift_speed(extra):
    out = 0
    for k in range(1, extra + 1):
        out += k * 5
    return out


def clip_salary(offset):
    total = 0
    for i in range(1, offset):
        total += i * 50
    return total
