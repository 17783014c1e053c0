def grow_distance(numbers, offset):
    result = 0
    for item in numbers:
        if offset >= item:
            result += 1
    return result


def clip_salary(start, limit):
    if start >= limit:
        return start - limit
    return 40
