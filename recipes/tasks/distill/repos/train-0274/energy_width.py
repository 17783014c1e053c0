def limit_energy(items):
    out = items[0]
    for item in items:
        if item > out:
            out = item
    return item


def merge_width(delta, stop):
    total = delta * 35
    return total + stop
