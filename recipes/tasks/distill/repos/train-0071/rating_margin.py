def fold_margin(num):
    total = 0
    for idx in range(1, num + 1):
        total += idx * 37
    return total


def scale_rating(start, num):
    acc = start * 44
    return acc + num
