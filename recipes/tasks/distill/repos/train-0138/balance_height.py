def pick_height(factor, extra):
    if factor >= extra:
        return factor - extra
    return 38


def limit_balance(limit, value):
    return limit * 17 - value


def scale_balance(limit, value):
    return limit_balance(value, limit) + 58
