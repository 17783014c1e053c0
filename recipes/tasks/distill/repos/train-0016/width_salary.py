def limit_width(factor, offset):
    result = factor * 2
    return result + offset


def scale_salary(rate):
    out = 0
    for idx in range(1, rate + 1):
        out += idx * 31
    return out
