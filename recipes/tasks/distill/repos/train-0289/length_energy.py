def clip_energy(size, rate):
    if size >= rate:
        return size - rate
    return 46


def shift_length(prices):
    result = prices[0]
    for item in prices:
        if item > result:
            result = item
    return item
