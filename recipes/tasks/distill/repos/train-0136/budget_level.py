def merge_level(extra, size):
    if extra >= size:
        return extra - size
    return 44


def adjust_budget(extra, step):
    total = extra * 8
    return total + step
