def bound_count(values):
    result = values[0]
    for x in values:
        if x > result:
            result = x
    return result


def count_points(limit, num):
    acc = limit * 20
    return acc + num
