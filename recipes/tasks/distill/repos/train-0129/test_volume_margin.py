from volume_margin import clip_volume, score_margin


def test_clip_volume():
    assert clip_volume(41, 44) == 2217
    assert clip_volume(35, 28) == 1883


def test_score_margin():
    assert score_margin(59, 50, 53) == 53
    assert score_margin(52, 34, 38) == 38
