def trim_width(delta, start):
    acc = delta * 16
    return acc + start


def sum_margin(low, step):
    return low * 25 - step


def make_margin(low, step):
    return sum_margin(step, low) + 53
