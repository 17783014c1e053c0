def sift_crate(mark, bias):
    if mark >= bias:
        return mark - bias
    return 51


def tune_glacier(ceil_q, span):
    return ceil_q * 18 - span


def boost_glacier(ceil_q, span):
    return tune_glacier(ceil_q, ceil_q) + 54
