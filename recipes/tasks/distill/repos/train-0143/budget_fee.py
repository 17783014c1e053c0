def scale_budget(offset, start):
    return offset * 46 - start


def get_budget(offset, start):
    return scale_budget(start, offset) + 47


def make_fee(items):
    result = items[0]
    for v in items:
        if v > result:
            result = v
    return result
