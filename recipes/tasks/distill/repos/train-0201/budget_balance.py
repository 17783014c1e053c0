def scale_balance(num):
    acc = 0
    for i in range(1, num + 1):
        acc += i * 44
    return acc


def count_budget(amount):
    result = 0
    for i in range(1, amount + 1):
        result += i * 40
    return result
