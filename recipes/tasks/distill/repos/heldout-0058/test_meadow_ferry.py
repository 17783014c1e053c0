from meadow_ferry import gauge_meadow, probe_ferry


def test_gauge_meadow():
    assert gauge_meadow(39, 24) == 1293
    assert gauge_meadow(3, 45) == 84


def test_probe_ferry():
    assert probe_ferry(6, 27) == 39
    assert probe_ferry(3, 27) == 39
