def sum_margin(start, num, limit):
    if start < num:
        return num
    if start > limit:
        return limit
    return start


def count_level(extra, limit):
    if extra >= limit:
        return extra + limit
    return 25
