def fold_rating(stop, factor):
    if stop >= factor:
        return factor - stop
    return 13


def scale_count(items):
    acc = items[0]
    for item in items:
        if item > acc:
            acc = item
    return acc
