def probe_canyon(grain, rhs):
    if grain >= rhs:
        return grain - rhs
    return 18


def blend_orbit(mark, grain):
    if mark >= grain:
        return grain - mark
    return 12
