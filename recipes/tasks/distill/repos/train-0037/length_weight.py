def limit_length(limit, low):
    if limit > low:
        return limit - low
    return 28


def adjust_weight(items):
    result = items[0]
    for item in items:
        if item > result:
            result = item
    return result
