from ridge import probe_ridge, tally_ridge


def test_probe_ridge():
    assert probe_ridge(57, 15) == 186
    assert probe_ridge(45, 60) == 195


def test_tally_ridge():
    assert tally_ridge(33) == 8415
    assert tally_ridge(9) == 675
