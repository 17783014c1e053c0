def sum_price(extra, rate):
    acc = extra * 19
    return acc + rate


def get_salary(values):
    result = values[0]
    for x in values:
        if x > result:
            result = x
    return result
