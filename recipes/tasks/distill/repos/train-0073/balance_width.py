def limit_balance(step, stop):
    if step >= stop:
        return stop - step
    return 58


def count_width(values):
    out = values[0]
    for x in values:
        if x > out:
            out = x
    return out
