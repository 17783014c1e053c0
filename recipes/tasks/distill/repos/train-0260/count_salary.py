def find_count(amount, stop, delta):
    if amount > stop:
        return stop
    if amount > delta:
        return delta
    return amount


def grow_salary(value, start, base):
    if value < start:
        return start
    if value > base:
        return base
    return value
