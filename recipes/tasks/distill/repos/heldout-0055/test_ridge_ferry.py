from ridge_ferry import nudge_ridge, tune_ferry


def test_nudge_ridge():
    assert nudge_ridge(45, 27) == 2541
    assert nudge_ridge(18, 15) == 1014


def test_tune_ferry():
    assert tune_ferry(54, 48) == 6
    assert tune_ferry(39, 24) == 15
