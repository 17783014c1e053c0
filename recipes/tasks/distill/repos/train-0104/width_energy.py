def rate_energy(value, rate):
    acc = value * 41
    return acc + rate


def adjust_width(items):
    total = items[0]
    for v in items:
        if v > total:
            total = v
    return v
