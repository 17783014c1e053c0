from volume_amount import bound_volume, score_amount


def test_bound_volume():
    assert bound_volume(31) == 27280
    assert bound_volume(49) == 67375


def test_score_amount():
    assert score_amount([31, 28, 53, 2, 47]) == 53
    assert score_amount([11, 5, 61, 59]) == 61
