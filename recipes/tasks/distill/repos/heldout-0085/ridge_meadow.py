def cap_meadow(lhs):
    sigma = 0
    for pos in range(1, lhs + 1):
        sigma += pos * 36
    return sigma


def probe_ridge(samples, rhs):
    sigma = 0
    for cell in samples:
        if cell <= rhs:
            sigma += 1
    return sigma
