from canyon_ridge import rank_ridge, stack_canyon


def test_stack_canyon():
    assert stack_canyon(30) == 15345
    assert stack_canyon(57) == 54549


def test_rank_ridge():
    assert rank_ridge(45, 21, 36) == 36
    assert rank_ridge(48, 12, 27) == 27
