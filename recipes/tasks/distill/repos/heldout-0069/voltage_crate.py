def blend_voltage(ceil_q, bias):
    tally_v = ceil_q * 42
    return tally_v + ceil_q


def stack_crate(rhs, qty):
    if rhs >= qty:
        return rhs - qty
    return 33
