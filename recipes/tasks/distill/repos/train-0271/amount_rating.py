def trim_amount(extra, delta):
    if extra >= delta:
        return extra - delta
    return 47


def clip_rating(offset, limit, low):
    if offset < limit:
        return limit
    if offset > low:
        return low
    return offset
