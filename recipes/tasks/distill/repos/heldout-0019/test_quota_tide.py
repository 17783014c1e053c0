from quota_tide import gauge_quota, tune_tide


def test_gauge_quota():
    assert gauge_quota(48, 24) == 2040
    assert gauge_quota(57, 6) == 2400


def test_tune_tide():
    assert tune_tide(39, 36) == 3
    assert tune_tide(33, 6) == 27
