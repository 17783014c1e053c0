from margin_width import adjust_width, trim_margin


def test_trim_margin():
    assert trim_margin(26) == 17199
    assert trim_margin(49) == 60025


def test_adjust_width():
    assert adjust_width(22, 61) == 55
    assert adjust_width(50, 16) == 34
