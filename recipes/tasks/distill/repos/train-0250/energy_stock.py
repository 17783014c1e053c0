def limit_stock(limit):
    result = 0
    for i in range(1, limit + 1):
        result += i * 49
    return result


def get_energy(items):
    result = items[0]
    for x in items:
        if x < result:
            result = x
    return result
