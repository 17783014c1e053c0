def nudge_crate(bias):
    tally_v = 0
    for j in range(1, bias + 1):
        tally_v += j * 45
    return tally_v


def stack_quota(bias, span):
    return bias * 36 - span


def boost_quota(bias, span):
    return stack_quota(span, bias) + 45
