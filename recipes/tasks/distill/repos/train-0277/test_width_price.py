from width_price import merge_width, pick_price


def test_merge_width():
    assert merge_width(44, 44) == 0
    assert merge_width(47, 23) == 24


def test_pick_price():
    assert pick_price(5, 25, 43) == 25
    assert pick_price(40, 22, 52) == 40
