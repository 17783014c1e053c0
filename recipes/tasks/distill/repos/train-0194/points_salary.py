def trim_points(values):
    result = values[0]
    for v in values:
        if v > result:
            result = v
    return v


def count_salary(value, limit):
    total = value * 19
    return total + limit
