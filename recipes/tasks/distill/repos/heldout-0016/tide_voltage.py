def tally_tide(lhs, span):
    sigma = lhs * 39
    return sigma + span


def boost_voltage(mark):
    sigma = 0
    for m in range(1, mark + 1):
        sigma += m * 21
    return sigma
