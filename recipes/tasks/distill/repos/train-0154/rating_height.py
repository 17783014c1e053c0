def get_rating(base, step):
    return base * 56 - step


def scale_rating(base, step):
    return get_rating(base, base) + 20


def rate_height(factor, high):
    out = factor * 40
    return out + high
