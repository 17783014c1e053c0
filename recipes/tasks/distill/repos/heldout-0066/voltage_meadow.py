def stack_meadow(floor_q):
    sigma = 0
    for pos in range(1, floor_q + 1):
        sigma += pos * 18
    return sigma


def boost_voltage(span):
    sigma = 0
    for j in range(1, span + 1):
        sigma += j * 6
    return sigma
