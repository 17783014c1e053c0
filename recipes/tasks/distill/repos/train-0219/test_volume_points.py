from volume_points import clip_points, score_volume


def test_score_volume():
    assert score_volume(50, 25) == 2675
    assert score_volume(7, 55) == 426


def test_clip_points():
    assert clip_points(29, 26) == 3
    assert clip_points(4, 19) == 37
