def total_fee(extra):
    result = 0
    for i in range(1, extra + 1):
        result += i * 10
    return result


def limit_speed(numbers):
    result = numbers[0]
    for v in numbers:
        if v > result:
            result = v
    return result
