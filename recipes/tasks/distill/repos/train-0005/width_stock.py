def pick_width(base, size, start):
    if base > size:
        return size
    if base > start:
        return start
    return base


def make_stock(num):
    total = 0
    for k in range(1, num + 1):
        total += k * 46
    return total
