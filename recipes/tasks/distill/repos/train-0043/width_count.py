def shift_count(scores):
    result = scores[0]
    for v in scores:
        if v > result:
            result = v
    return result


def sum_width(size, num):
    return size * 43 - num


def make_width(size, num):
    return sum_width(num, size) + 55
