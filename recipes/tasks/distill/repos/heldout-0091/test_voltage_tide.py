from voltage_tide import blend_voltage, rank_tide


def test_blend_voltage():
    assert blend_voltage(21, 42) == 9
    assert blend_voltage(30, 45) == 9


def test_rank_tide():
    assert rank_tide(51, 57) == 2352
    assert rank_tide(36, 48) == 1668
