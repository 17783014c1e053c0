from margin_volume import adjust_volume, trim_margin


def test_trim_margin():
    assert trim_margin(16, 38) == 19
    assert trim_margin(20, 35) == 19


def test_adjust_volume():
    assert adjust_volume(23, 23) == 0
    assert adjust_volume(50, 25) == 25
