def limit_price(step, start):
    if step > start:
        return step - start
    return 37


def sum_speed(numbers):
    result = numbers[0]
    for v in numbers:
        if v > result:
            result = v
    return result
