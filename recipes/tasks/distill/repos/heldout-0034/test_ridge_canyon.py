from ridge_canyon import nudge_ridge, stack_canyon


def test_nudge_ridge():
    assert nudge_ridge(27, 15) == 207
    assert nudge_ridge(60, 15) == 405


def test_stack_canyon():
    assert stack_canyon(42, 15, 24) == 24
    assert stack_canyon(42, 9, 15) == 15
