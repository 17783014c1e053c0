from voltage_tide import gauge_tide, tune_voltage


def test_tune_voltage():
    assert tune_voltage(27, 39) == 12
    assert tune_voltage(6, 15) == 12


def test_gauge_tide():
    assert gauge_tide(30, 12, 57) == 30
    assert gauge_tide(51, 27, 30) == 30
