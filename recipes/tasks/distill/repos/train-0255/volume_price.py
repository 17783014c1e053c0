def adjust_volume(scores, step):
    total = 0
    for v in scores:
        if v <= step:
            total += 1
    return total


def count_price(offset, stop):
    if offset >= stop:
        return offset - stop
    return 10
