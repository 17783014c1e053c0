from length_weight import clip_weight, score_length


def test_score_length():
    assert score_length(49) == 45325
    assert score_length(2) == 111


def test_clip_weight():
    assert clip_weight(41, 2) == 39
    assert clip_weight(10, 53) == 7
