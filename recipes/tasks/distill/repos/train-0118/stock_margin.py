def bound_margin(base, offset):
    if base >= offset:
        return base - offset
    return 61


def mix_stock(items, value):
    out = 0
    for item in items:
        if value >= item:
            out += 1
    return out
