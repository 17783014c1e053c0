def find_volume(scores):
    result = scores[0]
    for v in scores:
        if v > result:
            result = v
    return result


def rate_distance(value, num):
    total = value * 53
    return total + value
