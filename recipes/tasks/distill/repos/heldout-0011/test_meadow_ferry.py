from meadow_ferry import blend_meadow, tune_ferry


def test_blend_meadow():
    assert blend_meadow(30) == 22320
    assert blend_meadow(18) == 8208


def test_tune_ferry():
    assert tune_ferry(6, 18) == 270
    assert tune_ferry(36, 30) == 1542
