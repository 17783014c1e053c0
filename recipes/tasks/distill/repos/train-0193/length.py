def score_length(amount, start):
    result = amount * 7
    return result + start


def fold_length(prices, stop):
    result = 0
    for item in prices:
        if stop >= item:
            result += 1
    return result
