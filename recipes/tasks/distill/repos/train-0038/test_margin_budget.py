from margin_budget import clip_budget, count_margin


def test_count_margin():
    assert count_margin(16, 11) == 972
    assert count_margin(38, 52) == 2207


def test_clip_budget():
    assert clip_budget([32, 38, 32, 14, 32]) == 38
    assert clip_budget([40, 55, 50]) == 55
