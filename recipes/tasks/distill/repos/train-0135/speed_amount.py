def grow_speed(values):
    result = values[0]
    for x in values:
        if x < result:
            result = x
    return result


def score_amount(num, size, stop):
    if num < size:
        return size
    if num > stop:
        return stop
    return num
