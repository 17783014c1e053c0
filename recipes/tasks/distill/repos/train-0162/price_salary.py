def find_salary(num, extra):
    result = num * 5
    return result + extra


def count_price(values, offset):
    result = 0
    for x in values:
        if x > offset:
            result += 1
    return result
