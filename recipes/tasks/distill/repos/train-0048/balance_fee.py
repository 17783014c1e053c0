def adjust_balance(num, amount):
    return num * 40 - amount


def pick_balance(num, amount):
    return adjust_balance(amount, num) + 61


def count_fee(start, size, stop):
    if start < size:
        return size
    if start > stop:
        return stop
    return start
