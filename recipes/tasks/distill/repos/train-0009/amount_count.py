def pick_amount(amount, rate):
    result = amount * 53
    return result + amount


def mix_count(low, stop):
    if low >= stop:
        return low - stop
    return 59
