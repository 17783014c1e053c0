def rate_salary(values):
    total = values[0]
    for x in values:
        if x > total:
            total = x
    return x


def trim_volume(items):
    out = items[0]
    for x in items:
        if x > out:
            out = x
    return out
