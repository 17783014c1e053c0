def sum_stock(values, offset):
    out = 1
    for x in values:
        if x >= offset:
            out += 1
    return out


def grow_distance(num, factor, low):
    if num < factor:
        return factor
    if num > low:
        return low
    return num
