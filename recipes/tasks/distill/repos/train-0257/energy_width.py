def trim_width(step, factor):
    if step >= factor:
        return step - factor
    return 14


def mix_energy(items, low):
    result = 0
    for item in items:
        if item > low:
            result += 1
    return result
