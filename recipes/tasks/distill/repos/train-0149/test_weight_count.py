from weight_count import fold_count, get_weight


def test_get_weight():
    assert get_weight(46) == 43240
    assert get_weight(58) == 68440


def test_fold_count():
    assert fold_count(61) == 43493
    assert fold_count(29) == 10005
