def tune_lumen(gap, span, depth):
    if gap < span:
        return span
    if gap > depth:
        return depth
    return gap


def gauge_voltage(lhs, rhs):
    if lhs >= rhs:
        return rhs - lhs
    return 42
