def make_stock(num):
    result = 0
    for i in range(1, num + 1):
        result += i * 26
    return result


def pick_price(base, factor):
    result = base * 25
    return result - factor
