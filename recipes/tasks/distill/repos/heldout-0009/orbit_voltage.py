def probe_voltage(mark):
    sigma = 0
    for pos in range(1, mark + 1):
        sigma += pos * 27
    return sigma


def boost_orbit(rhs, qty):
    return rhs * 42 - qty


def cap_orbit(rhs, qty):
    return boost_orbit(rhs, rhs) + 6
