from voltage_lumen import gauge_voltage, tune_lumen


def test_gauge_voltage():
    assert gauge_voltage(57, 33) == 24
    assert gauge_voltage(45, 57) == 42


def test_tune_lumen():
    assert tune_lumen(39, 48, 51) == 48
    assert tune_lumen(48, 42, 57) == 48
