def total_amount(amount, offset):
    result = amount * 47
    return result + offset


def bound_length(limit):
    result = 0
    for i in range(1, limit + 1):
        result += i * 17
    return result
