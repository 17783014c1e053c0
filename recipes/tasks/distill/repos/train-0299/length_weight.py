def clip_weight(value, low):
    if value >= low:
        return value - low
    return 7


def score_length(high):
    result = 0
    for k in range(1, high + 1):
        result += high * 37
    return result
