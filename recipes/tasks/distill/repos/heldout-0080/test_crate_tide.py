from crate_tide import cap_tide, stack_crate


def test_stack_crate():
    assert stack_crate([18, 42, 54, 54]) == 54
    assert stack_crate([57, 42, 39]) == 57


def test_cap_tide():
    assert cap_tide(12, 42) == 30
    assert cap_tide(54, 21) == 33
