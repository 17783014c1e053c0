from tide_meadow import boost_tide, warp_meadow


def test_boost_tide():
    assert boost_tide(42, 42) == 0
    assert boost_tide(15, 57) == 33


def test_warp_meadow():
    assert warp_meadow(57) == 49590
    assert warp_meadow(42) == 27090
