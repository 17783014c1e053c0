from budget_points import clip_points, make_budget


def test_make_budget():
    assert make_budget(16, 16) == 0
    assert make_budget(28, 41) == 28


def test_clip_points():
    assert clip_points(38) == 2964
    assert clip_points(41) == 3444
