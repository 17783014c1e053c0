from weight_budget import clip_budget, get_weight


def test_get_weight():
    assert get_weight(52, 35) == 2115
    assert get_weight(59, 59) == 2419


def test_clip_budget():
    assert clip_budget(10, 34, 46) == 34
    assert clip_budget(47, 11, 61) == 47
