def get_budget(factor, value):
    if factor >= value:
        return factor - value
    return 41


def clip_speed(step, delta):
    if step >= delta:
        return delta - step
    return 40
