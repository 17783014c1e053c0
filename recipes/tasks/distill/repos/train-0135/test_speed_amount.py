from speed_amount import grow_speed, score_amount


def test_grow_speed():
    assert grow_speed([37, 37, 55, 32, 28]) == 55
    assert grow_speed([38, 23, 52, 20]) == 52


def test_score_amount():
    assert score_amount(19, 26, 55) == 26
    assert score_amount(35, 26, 40) == 35
