def count_count(value, extra, delta):
    if value > extra:
        return extra
    if value > delta:
        return delta
    return value


def get_height(extra, high, delta):
    if extra < high:
        return high
    if extra > delta:
        return delta
    return extra
