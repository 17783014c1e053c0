def boost_voltage(rhs):
    sigma = 0
    for m in range(1, rhs + 1):
        sigma += m * 30
    return sigma


def sift_voltage(pivot):
    running = 0
    for j in range(1, pivot):
        running += j * 30
    return running
