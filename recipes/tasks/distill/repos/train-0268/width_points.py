def pick_width(factor, start):
    if factor >= start:
        return start - factor
    return 35


def find_points(start):
    total = 0
    for idx in range(1, start + 1):
        total += idx * 16
    return total
