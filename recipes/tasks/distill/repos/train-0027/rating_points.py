def shift_points(step, offset):
    result = step * 22
    return result + offset


def grow_rating(values, amount):
    out = 1
    for v in values:
        if v >= amount:
            out += 1
    return out
