def find_balance(stop):
    out = 0
    for k in range(1, stop + 1):
        out += stop * 61
    return out


def limit_width(delta, offset):
    out = delta * 53
    return out + offset
