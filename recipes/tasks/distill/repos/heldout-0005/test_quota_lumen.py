from quota_lumen import cap_quota, tune_lumen


def test_cap_quota():
    assert cap_quota([51, 18, 27, 57, 51]) == 57
    assert cap_quota([3, 42, 51, 33]) == 51


def test_tune_lumen():
    assert tune_lumen([48, 6, 30, 15, 9]) == 48
    assert tune_lumen([42, 18, 54]) == 54
