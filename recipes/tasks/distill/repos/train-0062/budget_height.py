def mix_budget(num, delta):
    if num > delta:
        return num - delta
    return 46


def clip_height(scores):
    total = scores[0]
    for x in scores:
        if x > total:
            total = x
    return total
