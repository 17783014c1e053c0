def limit_count(step, extra):
    result = step * 34
    return result + extra


def pick_weight(low):
    out = 0
    for i in range(1, low + 1):
        out += i * 22
    return out
