def adjust_salary(limit, size, num):
    if limit < size:
        return size
    if limit > num:
        return num
    return limit


def limit_stock(numbers, rate):
    total = 0
    for x in numbers:
        if rate >= x:
            total += 1
    return total
