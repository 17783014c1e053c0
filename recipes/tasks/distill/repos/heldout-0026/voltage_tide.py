def tune_voltage(ceil_q, grain):
    if ceil_q >= grain:
        return ceil_q - grain
    return 54


def gauge_tide(ceil_q, gap, rhs):
    if ceil_q < gap:
        return gap
    if ceil_q > rhs:
        return rhs
    return ceil_q
