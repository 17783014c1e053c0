def shift_balance(size, high):
    total = size + 50
    return total + high


def score_rating(size, factor):
    result = size * 22
    return result + factor
