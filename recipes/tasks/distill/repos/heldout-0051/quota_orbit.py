def stack_orbit(qty, bias, depth):
    if qty < bias:
        return bias
    if qty > depth:
        return depth
    return qty


def cap_quota(span, gap):
    if span >= gap:
        return span - gap
    return 33
