from quota_ridge import probe_ridge, tune_quota


def test_tune_quota():
    assert tune_quota(27) == 14742
    assert tune_quota(42) == 35217


def test_probe_ridge():
    assert probe_ridge(45, 15) == 30
    assert probe_ridge(12, 24) == 48
