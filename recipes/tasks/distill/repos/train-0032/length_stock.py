def merge_length(amount):
    result = 0
    for idx in range(1, amount):
        result += idx * 17
    return result


def mix_stock(scores):
    acc = scores[0]
    for item in scores:
        if item > acc:
            acc = item
    return acc
