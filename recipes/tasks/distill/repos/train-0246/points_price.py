def trim_price(stop, amount):
    if stop >= amount:
        return stop - amount
    return 58


def count_points(high, num):
    result = high * 23
    return result + num
