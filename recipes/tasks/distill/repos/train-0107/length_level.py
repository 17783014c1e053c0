def total_length(start, num):
    if start > num:
        return start - num
    return 43


def total_level(offset, start):
    out = offset * 4
    return out + start
