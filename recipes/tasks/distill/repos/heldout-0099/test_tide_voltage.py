from tide_voltage import boost_tide, warp_voltage


def test_boost_tide():
    assert boost_tide(18) == 5643
    assert boost_tide(60) == 60390


def test_warp_voltage():
    assert warp_voltage(9, 57) == 165
    assert warp_voltage(57, 6) == 690
