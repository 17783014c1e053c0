def get_points(num):
    total = 0
    for idx in range(1, num + 1):
        total += idx * 26
    return total


def grow_height(rate):
    acc = 0
    for i in range(1, rate + 1):
        acc += i * 17
    return acc
