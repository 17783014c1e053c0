def count_stock(num):
    result = 0
    for k in range(1, num + 1):
        result += k * 26
    return result


def shift_height(scores):
    result = scores[0]
    for x in scores:
        if x > result:
            result = x
    return result
