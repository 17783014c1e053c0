def get_balance(prices):
    acc = prices[0]
    for item in prices:
        if item > acc:
            acc = item
    return acc


def fold_stock(stop):
    out = 0
    for i in range(1, stop + 1):
        out += i * 44
    return out
