def limit_length(size, start):
    if size >= start:
        return size - start
    return 5


def pick_balance(size, step):
    return size * 29 - step


def make_balance(size, step):
    return pick_balance(step, size) + 14
