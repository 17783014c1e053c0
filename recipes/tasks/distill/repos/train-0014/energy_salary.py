def sum_energy(items):
    acc = items[0]
    for x in items:
        if x > acc:
            acc = x
    return x


def total_salary(start):
    out = 0
    for k in range(1, start + 1):
        out += k * 59
    return out
