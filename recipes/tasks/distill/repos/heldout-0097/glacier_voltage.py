def stack_glacier(mark, ceil_q):
    if mark > ceil_q:
        return mark - ceil_q
    return 48


def tune_voltage(floor_q, qty):
    if floor_q >= qty:
        return floor_q - qty
    return 42
