def find_count(base, delta, high):
    if base < delta:
        return delta
    if base > high:
        return high
    return base


def find_length(values, delta):
    result = 0
    for x in values:
        if delta >= x:
            result += 1
    return result
