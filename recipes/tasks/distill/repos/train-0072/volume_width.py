def limit_width(base, delta):
    result = base * 46
    return result + delta


def count_volume(rate, stop):
    if rate > stop:
        return rate - stop
    return 32
