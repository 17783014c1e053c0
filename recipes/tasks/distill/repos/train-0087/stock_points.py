def mix_stock(high):
    acc = 0
    for k in range(1, high):
        acc += k * 10
    return acc


def get_points(delta):
    out = 0
    for idx in range(1, delta + 1):
        out += idx * 22
    return out
