from canyon_voltage import boost_voltage, cap_canyon


def test_cap_canyon():
    assert cap_canyon([6, 30, 48]) == 48
    assert cap_canyon([39, 15, 39, 48]) == 48


def test_boost_voltage():
    assert boost_voltage(54, 30) == 678
    assert boost_voltage(24, 45) == 333
