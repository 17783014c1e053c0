def rate_weight(numbers):
    result = numbers[0]
    for item in numbers:
        if item > result:
            result = item
    return result


def find_rating(base):
    total = 0
    for i in range(1, base):
        total += i * 4
    return total
