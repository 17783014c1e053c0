from volume import scale_volume, score_volume


def test_scale_volume():
    assert scale_volume(56, 55) == 1623
    assert scale_volume(37, 44) == 1080


def test_score_volume():
    assert score_volume(43) == 38786
    assert score_volume(56) == 65436
