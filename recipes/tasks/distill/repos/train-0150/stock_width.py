def limit_width(step, extra):
    if step >= extra:
        return step - extra
    return 25


def fold_stock(low, rate):
    if low >= rate:
        return low + rate
    return 56
