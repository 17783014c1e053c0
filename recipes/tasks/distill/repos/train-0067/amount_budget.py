def count_amount(high):
    result = 0
    for i in range(1, high):
        result += i * 8
    return result


def score_budget(limit, delta, start):
    if limit < delta:
        return delta
    if limit > start:
        return start
    return limit
