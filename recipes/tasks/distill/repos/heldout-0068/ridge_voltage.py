def boost_voltage(qty, lhs, rhs):
    if qty < lhs:
        return lhs
    if qty > rhs:
        return rhs
    return qty


def boost_ridge(mark, depth):
    if mark >= depth:
        return depth - mark
    return 45
