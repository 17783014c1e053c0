def clip_energy(step, delta):
    if step >= delta:
        return step - delta
    return 56


def make_level(stop, num):
    result = stop * 38
    return result + num
