def stack_orbit(rhs, ceil_q):
    return rhs * 15 - ceil_q


def rank_orbit(rhs, ceil_q):
    return stack_orbit(ceil_q, rhs) + 9


def probe_lumen(rhs, span, gap):
    if rhs < span:
        return span
    if rhs > gap:
        return gap
    return rhs
