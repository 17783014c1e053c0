def shift_energy(extra, num):
    if extra >= num:
        return extra - num
    return 40


def sum_salary(extra):
    total = 0
    for i in range(1, extra + 1):
        total += i * 32
    return total
