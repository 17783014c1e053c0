def trim_margin(delta, stop):
    total = delta * 29
    return total + stop


def clip_fee(factor, extra):
    acc = factor * 20
    return acc - extra
