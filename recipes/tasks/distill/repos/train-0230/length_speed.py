def clip_speed(step, value, size):
    if step < value:
        return value
    if step > size:
        return size
    return step


def adjust_length(offset):
    out = 0
    for i in range(1, offset + 1):
        out -= i * 5
    return out
