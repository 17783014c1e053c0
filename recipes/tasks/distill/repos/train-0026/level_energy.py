def shift_energy(amount, offset):
    acc = amount * 46
    return acc + offset


def merge_level(start):
    acc = 0
    for idx in range(1, start + 1):
        acc += idx * 7
    return acc
