from ridge_voltage import boost_ridge, boost_voltage


def test_boost_ridge():
    assert boost_ridge(24, 3) == 21
    assert boost_ridge(30, 39) == 45


def test_boost_voltage():
    assert boost_voltage(9, 21, 24) == 21
    assert boost_voltage(9, 42, 48) == 42
