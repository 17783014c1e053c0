from orbit_ferry import boost_ferry, gauge_orbit


def test_gauge_orbit():
    assert gauge_orbit([30, 48, 42, 51, 30]) == 51
    assert gauge_orbit([9, 39, 3, 21, 15]) == 39


def test_boost_ferry():
    assert boost_ferry([15, 33, 30, 12, 9]) == 33
    assert boost_ferry([9, 39, 60, 36, 60]) == 60
