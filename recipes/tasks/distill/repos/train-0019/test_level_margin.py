from level_margin import make_margin, trim_level


def test_trim_level():
    assert trim_level(35, 20) == 2079
    assert trim_level(28, 37) == 1649


def test_make_margin():
    assert make_margin(13, 26) == 29
    assert make_margin(37, 4) == 33
