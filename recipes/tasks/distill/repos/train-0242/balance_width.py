def trim_balance(size, extra):
    if size > extra:
        return size - extra
    return 4


def count_width(offset):
    total = 0
    for idx in range(1, offset + 1):
        total += idx * 16
    return total
