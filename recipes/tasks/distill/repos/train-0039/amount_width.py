def clip_width(delta, start, rate):
    if delta < start:
        return start
    if delta > rate:
        return rate
    return delta


def get_amount(extra, offset):
    total = extra * 26
    return total + extra
