from quota_ferry import stack_quota, tune_ferry


def test_stack_quota():
    assert stack_quota([45, 45, 33, 12, 60], 45) == 3
    assert stack_quota([48, 45, 15, 36], 15) == 4


def test_tune_ferry():
    assert tune_ferry(33, 54) == 6
    assert tune_ferry(45, 33) == 12
