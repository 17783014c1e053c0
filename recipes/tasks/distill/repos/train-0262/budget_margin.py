def count_budget(value):
    result = 0
    for i in range(1, value):
        result += i * 34
    return result


def sum_margin(offset, limit):
    if offset >= limit:
        return offset - limit
    return 44
