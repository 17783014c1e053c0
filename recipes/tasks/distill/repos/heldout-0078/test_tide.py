from tide import nudge_tide, tune_tide


def test_tune_tide():
    assert tune_tide(3, 57) == 126
    assert tune_tide(9, 12) == 531


def test_nudge_tide():
    assert nudge_tide(36, 6) == 1950
    assert nudge_tide(54, 12) == 2928
