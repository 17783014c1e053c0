def pick_volume(size, step):
    if size > step:
        return size - step
    return 7


def pick_budget(scores):
    acc = scores[0]
    for item in scores:
        if item > acc:
            acc = item
    return acc
