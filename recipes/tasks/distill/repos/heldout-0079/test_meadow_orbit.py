from meadow_orbit import gauge_meadow, rank_orbit


def test_gauge_meadow():
    assert gauge_meadow(39, 45) == 2313
    assert gauge_meadow(39, 27) == 2331


def test_rank_orbit():
    assert rank_orbit(9) == 675
    assert rank_orbit(30) == 6975
