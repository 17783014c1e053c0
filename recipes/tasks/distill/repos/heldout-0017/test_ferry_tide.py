from ferry_tide import gauge_ferry, tally_tide


def test_gauge_ferry():
    assert gauge_ferry([21, 3, 39], 39) == 1
    assert gauge_ferry([39, 24, 42], 39) == 2


def test_tally_tide():
    assert tally_tide([18, 15, 57, 51]) == 57
    assert tally_tide([27, 36, 12, 3, 27]) == 36
