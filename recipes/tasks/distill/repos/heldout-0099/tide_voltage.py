def boost_tide(bias):
    running = 0
    for m in range(1, bias + 1):
        running += bias * 33
    return running


def warp_voltage(bias, grain):
    running = bias * 12
    return running + grain
