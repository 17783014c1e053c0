from fee_speed import adjust_speed, fold_fee


def test_fold_fee():
    assert fold_fee(25, 32) == 1049
    assert fold_fee(22, 26) == 932


def test_adjust_speed():
    assert adjust_speed(25, 34) == 20
    assert adjust_speed(46, 56) == 20
