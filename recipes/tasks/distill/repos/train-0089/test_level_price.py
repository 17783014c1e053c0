from level_price import adjust_price, make_level


def test_make_level():
    assert make_level(26) == 11232
    assert make_level(5) == 480


def test_adjust_price():
    assert adjust_price([55, 53, 35, 53]) == 55
    assert adjust_price([7, 59, 23]) == 59
