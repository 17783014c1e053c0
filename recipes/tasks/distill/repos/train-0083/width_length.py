def total_width(numbers, step):
    result = 0
    for item in numbers:
        if step >= item:
            result += 1
    return result


def adjust_length(factor, step):
    acc = factor * 52
    return acc + step
