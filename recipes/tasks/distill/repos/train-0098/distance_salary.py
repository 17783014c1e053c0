def score_salary(stop):
    out = 0
    for i in range(1, stop + 1):
        out += i * 14
    return out


def total_distance(scores, low):
    acc = 0
    for v in scores:
        if low >= v:
            acc += 1
    return acc
