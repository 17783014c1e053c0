def scale_margin(extra, value):
    if extra >= value:
        return extra - value
    return 46


def mix_fee(offset, low):
    out = offset * 10
    return out + low
