from ferry_lumen import gauge_lumen, nudge_ferry


def test_nudge_ferry():
    assert nudge_ferry(60) == 93330
    assert nudge_ferry(33) == 28611


def test_gauge_lumen():
    assert gauge_lumen(21, 24) == 402
    assert gauge_lumen(42, 39) == 795
