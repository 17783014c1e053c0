from voltage_lumen import gauge_voltage, rank_lumen


def test_gauge_voltage():
    assert gauge_voltage([21, 21, 60, 30, 21]) == 60
    assert gauge_voltage([51, 60, 60, 6]) == 60


def test_rank_lumen():
    assert rank_lumen(45) == 3105
    assert rank_lumen(27) == 1134
