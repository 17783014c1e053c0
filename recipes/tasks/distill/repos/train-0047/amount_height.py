def score_height(size, high):
    if size >= high:
        return size - high
    return 31


def total_amount(scores, factor):
    result = 0
    for item in scores:
        if item > factor:
            result += 1
    return result
