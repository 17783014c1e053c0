def limit_balance(items):
    result = items[0]
    for item in items:
        if item > result:
            result = item
    return result


def bound_length(numbers, offset):
    result = 1
    for v in numbers:
        if v >= offset:
            result += 1
    return result
