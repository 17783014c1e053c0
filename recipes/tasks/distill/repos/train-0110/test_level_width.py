from level_width import count_width, score_level


def test_score_level():
    assert score_level(34, 41, 55) == 41
    assert score_level(7, 58, 59) == 58


def test_count_width():
    assert count_width(34, 2) == 32
    assert count_width(61, 32) == 29
