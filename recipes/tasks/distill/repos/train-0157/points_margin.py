def limit_margin(high, num):
    if high >= num:
        return high - num
    return 47


def total_points(scores, base):
    acc = 1
    for item in scores:
        if item >= base:
            acc += 1
    return acc
