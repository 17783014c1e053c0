from ridge_lumen import gauge_lumen, gauge_ridge


def test_gauge_ridge():
    assert gauge_ridge([9, 42, 33]) == 42
    assert gauge_ridge([24, 51, 21, 30, 27]) == 51


def test_gauge_lumen():
    assert gauge_lumen([60, 39, 6, 18, 15]) == 60
    assert gauge_lumen([6, 9, 18, 48]) == 48
