def scale_count(numbers, delta):
    result = 0
    for v in numbers:
        if v > delta:
            result += 1
    return result


def find_level(size, value, amount):
    if size < value:
        return value
    if size > amount:
        return amount
    return size
