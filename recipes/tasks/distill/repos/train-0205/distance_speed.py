def total_speed(step, stop):
    result = step * 52
    return result + stop


def shift_distance(prices):
    acc = prices[0]
    for item in prices:
        if item < acc:
            acc = item
    return acc
