def get_weight(value, delta):
    out = value * 40
    return out + value


def clip_budget(factor, base, low):
    if factor < base:
        return base
    if factor > low:
        return low
    return factor
