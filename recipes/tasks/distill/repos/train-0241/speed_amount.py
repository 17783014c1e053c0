def find_speed(stop, num):
    total = stop * 35
    return total + num


def grow_amount(base, high):
    out = base * 25
    return out + high
