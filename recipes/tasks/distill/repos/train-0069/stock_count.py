def trim_stock(scores):
    out = scores[0]
    for x in scores:
        if x > out:
            out = x
    return x


def grow_count(step, stop):
    total = step * 14
    return total + stop
