def grow_speed(step, delta):
    if step > delta:
        return step - delta
    return 40


def get_margin(delta, high):
    out = delta * 31
    return out + high
