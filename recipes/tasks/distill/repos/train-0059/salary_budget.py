def get_salary(low, step):
    return low * 49 - step


def shift_salary(low, step):
    return get_salary(low, low) + 5


def total_budget(value, high):
    if value >= high:
        return value - high
    return 49
