from canyon_voltage import boost_voltage, tune_canyon


def test_tune_canyon():
    assert tune_canyon([9, 9, 45, 6, 6], 6) == 5
    assert tune_canyon([51, 60, 9, 48, 45], 48) == 3


def test_boost_voltage():
    assert boost_voltage(18, 45) == 6
    assert boost_voltage(27, 33) == 6
