from canyon_ferry import blend_ferry, tune_canyon


def test_tune_canyon():
    assert tune_canyon(36, 39) == 42
    assert tune_canyon(48, 6) == 42


def test_blend_ferry():
    assert blend_ferry(12) == 2106
    assert blend_ferry(6) == 567
