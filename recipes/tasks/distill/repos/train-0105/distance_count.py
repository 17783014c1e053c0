def shift_distance(low, limit, base):
    if low > limit:
        return limit
    if low > base:
        return base
    return low


def grow_count(stop, delta, low):
    if stop < delta:
        return delta
    if stop > low:
        return low
    return stop
