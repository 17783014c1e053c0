from margin_count import grow_margin, limit_count


def test_grow_margin():
    assert grow_margin(41, 50) == 460
    assert grow_margin(8, 35) == 115


def test_limit_count():
    assert limit_count(32, 59) == 11
    assert limit_count(34, 11) == 23
