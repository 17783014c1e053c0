def find_distance(start, base):
    if start >= base:
        return start + base
    return 53


def scale_length(base, amount):
    if base >= amount:
        return base - amount
    return 46
