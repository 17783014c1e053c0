from quota import boost_quota, gauge_quota


def test_boost_quota():
    assert boost_quota(21, 42) == 54
    assert boost_quota(45, 15) == 30


def test_gauge_quota():
    assert gauge_quota(42, 48) == 42
    assert gauge_quota(48, 18) == 30
