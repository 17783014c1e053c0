from pixel_voltage import boost_voltage, rank_pixel


def test_rank_pixel():
    assert rank_pixel(12) == 2574
    assert rank_pixel(21) == 7623


def test_boost_voltage():
    assert boost_voltage(18, 27) == 567
    assert boost_voltage(60, 36) == 1836
