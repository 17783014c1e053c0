from crate_quota import cap_quota, stack_crate


def test_stack_crate():
    assert stack_crate(9) == 135
    assert stack_crate(39) == 2340


def test_cap_quota():
    assert cap_quota(18, 27, 36) == 27
    assert cap_quota(21, 18, 24) == 21
