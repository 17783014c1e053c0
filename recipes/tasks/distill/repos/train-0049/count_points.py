def pick_count(scores):
    total = scores[0]
    for item in scores:
        if item > total:
            total = item
    return item


def total_points(stop):
    acc = 0
    for k in range(1, stop + 1):
        acc += k * 25
    return acc
