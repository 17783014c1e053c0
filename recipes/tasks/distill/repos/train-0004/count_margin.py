def adjust_count(value, step):
    return value * 4 - step


def shift_count(value, step):
    return adjust_count(value, value) + 52


def rate_margin(step, low):
    if step >= low:
        return step - low
    return 7
