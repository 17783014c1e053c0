def merge_length(extra, high, delta):
    if extra < high:
        return high
    if extra > delta:
        return delta
    return extra


def shift_budget(items, base):
    result = 0
    for x in items:
        if base >= x:
            result += 1
    return result
