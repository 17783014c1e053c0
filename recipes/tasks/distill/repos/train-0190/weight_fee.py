def limit_weight(step, low, stop):
    if step > low:
        return low
    if step > stop:
        return stop
    return step


def trim_fee(base):
    result = 0
    for k in range(1, base + 1):
        result += k * 37
    return result
