from speed_height import score_height, trim_speed


def test_trim_speed():
    assert trim_speed([29, 23, 59, 47, 16]) == 59
    assert trim_speed([7, 55, 16, 35, 8]) == 55


def test_score_height():
    assert score_height(26, 49) == 491
    assert score_height(52, 58) == 942
