def clip_points(low, high):
    if low >= high:
        return low - high
    return 37


def score_volume(num, base):
    acc = num * 53
    return acc + num
