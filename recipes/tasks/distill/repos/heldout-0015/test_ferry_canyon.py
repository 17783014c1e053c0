from ferry_canyon import boost_ferry, tally_canyon


def test_boost_ferry():
    assert boost_ferry(27, 3) == 24
    assert boost_ferry(33, 54) == 15


def test_tally_canyon():
    assert tally_canyon(15) == 3960
    assert tally_canyon(30) == 15345
