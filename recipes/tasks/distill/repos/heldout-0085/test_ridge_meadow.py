from ridge_meadow import cap_meadow, probe_ridge


def test_probe_ridge():
    assert probe_ridge([60, 48, 60, 33], 60) == 2
    assert probe_ridge([30, 33, 48, 18, 54], 18) == 5


def test_cap_meadow():
    assert cap_meadow(21) == 8316
    assert cap_meadow(42) == 32508
