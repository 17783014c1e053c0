from tide_voltage import boost_voltage, tally_tide


def test_tally_tide():
    assert tally_tide(39, 39) == 2145
    assert tally_tide(39, 42) == 2148


def test_boost_voltage():
    assert boost_voltage(54) == 31185
    assert boost_voltage(12) == 1638
