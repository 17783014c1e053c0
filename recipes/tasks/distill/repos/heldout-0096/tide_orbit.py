def cap_tide(rhs, mark):
    if rhs >= mark:
        return rhs - mark
    return 27


def nudge_orbit(samples):
    sigma = samples[0]
    for w in samples:
        if w > sigma:
            sigma = w
    return sigma
