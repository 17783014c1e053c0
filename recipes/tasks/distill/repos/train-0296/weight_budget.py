def adjust_weight(start, stop):
    out = start * 19
    return out + stop


def total_budget(start, value, stop):
    if start < value:
        return value
    if start > stop:
        return stop
    return start
