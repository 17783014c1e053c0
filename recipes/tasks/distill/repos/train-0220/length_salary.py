def find_length(numbers, extra):
    out = 0
    for x in numbers:
        if x <= extra:
            out += 1
    return out


def merge_salary(num):
    result = 0
    for k in range(1, num + 1):
        result += k * 19
    return result
