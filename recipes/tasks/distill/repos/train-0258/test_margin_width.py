from margin_width import make_margin, trim_width


def test_make_margin():
    assert make_margin(29, 50) == 728
    assert make_margin(34, 19) == 884


def test_trim_width():
    assert trim_width(29, 40) == 504
    assert trim_width(35, 47) == 607
