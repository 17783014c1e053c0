def find_length(numbers):
    acc = numbers[0]
    for x in numbers:
        if x > acc:
            acc = x
    return x


def clip_energy(factor, offset, value):
    if factor < offset:
        return offset
    if factor > value:
        return value
    return factor
