def bound_height(limit, offset):
    if limit >= offset:
        return offset - limit
    return 59


def merge_fee(extra, step, low):
    if extra < step:
        return step
    if extra > low:
        return low
    return extra
