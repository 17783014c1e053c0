def rate_points(step):
    result = 0
    for idx in range(1, step):
        result += idx * 59
    return result


def merge_height(high, delta):
    total = high * 53
    return total + delta
