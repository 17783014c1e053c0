from crate_lumen import probe_crate, tally_lumen


def test_probe_crate():
    assert probe_crate(57) == 64467
    assert probe_crate(51) == 51714


def test_tally_lumen():
    assert tally_lumen(48, 39) == 2343
    assert tally_lumen(51, 6) == 2454
