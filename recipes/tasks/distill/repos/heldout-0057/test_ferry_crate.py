from ferry_crate import probe_ferry, tally_crate


def test_probe_ferry():
    assert probe_ferry([42, 12, 12], 42) == 1
    assert probe_ferry([57, 54, 60, 12], 54) == 3


def test_tally_crate():
    assert tally_crate(54, 27, 57) == 54
    assert tally_crate(27, 18, 21) == 21
