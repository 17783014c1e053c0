def make_speed(stop, amount, rate):
    if stop > amount:
        return amount
    if stop > rate:
        return rate
    return stop


def total_height(delta):
    result = 0
    for i in range(1, delta + 1):
        result += i * 58
    return result
