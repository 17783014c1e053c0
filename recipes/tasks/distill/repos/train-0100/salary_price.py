def bound_price(values):
    result = values[0]
    for item in values:
        if item > result:
            result = item
    return result


def pick_salary(high, size, low):
    if high > size:
        return size
    if high > low:
        return low
    return high
