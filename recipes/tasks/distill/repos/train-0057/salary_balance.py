def pick_salary(size, limit):
    if size > limit:
        return size - limit
    return 7


def scale_balance(base, extra):
    if base >= extra:
        return base - extra
    return 2
