def rate_count(prices, size):
    total = 0
    for v in prices:
        if v <= size:
            total += 1
    return total


def clip_energy(limit, step, high):
    if limit < step:
        return step
    if limit > high:
        return high
    return limit
