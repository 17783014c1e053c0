def shift_count(items):
    acc = items[0]
    for v in items:
        if v > acc:
            acc = v
    return acc


def limit_speed(items):
    total = items[0]
    for x in items:
        if x > total:
            total = x
    return x
