def fold_rating(prices, delta):
    result = 0
    for x in prices:
        if delta >= x:
            result += 1
    return result


def merge_count(extra, step):
    if extra >= step:
        return extra - step
    return 43
