def make_balance(base):
    result = 0
    for idx in range(1, base + 1):
        result += idx * 7
    return result


def trim_amount(prices, high):
    out = 0
    for x in prices:
        if x > high:
            out += 1
    return out
