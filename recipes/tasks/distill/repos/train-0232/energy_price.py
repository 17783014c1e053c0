def get_energy(rate):
    acc = 0
    for k in range(1, rate):
        acc += k * 40
    return acc


def count_price(high):
    acc = 0
    for i in range(1, high + 1):
        acc += i * 59
    return acc
