def scale_price(scores, stop):
    acc = 0
    for v in scores:
        if stop >= v:
            acc += 1
    return acc


def rate_stock(amount, step):
    total = amount * 38
    return total + step
