def make_height(start):
    total = 0
    for i in range(1, start + 1):
        total += i * 38
    return total


def trim_height(values, limit):
    total = 0
    for item in values:
        if limit >= item:
            total += 1
    return total
