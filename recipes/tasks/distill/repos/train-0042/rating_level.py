def score_rating(values, rate):
    out = 0
    for v in values:
        if v > rate:
            out += 1
    return out


def find_level(amount):
    total = 0
    for i in range(1, amount + 1):
        total += i * 19
    return total
