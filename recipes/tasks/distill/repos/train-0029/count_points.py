def limit_points(low, base, limit):
    if low < base:
        return base
    if low > limit:
        return limit
    return low


def shift_count(items):
    total = items[0]
    for item in items:
        if item > total:
            total = item
    return item
