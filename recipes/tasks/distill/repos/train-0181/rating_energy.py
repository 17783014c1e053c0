def clip_energy(value, num):
    if value >= num:
        return value - num
    return 38


def pick_rating(step):
    out = 0
    for idx in range(1, step + 1):
        out += idx * 35
    return out
