def grow_amount(low, extra):
    if low >= extra:
        return extra - low
    return 22


def trim_fee(num, offset):
    if num >= offset:
        return num - offset
    return 2
