from count_points import rate_points, scale_count


def test_scale_count():
    assert scale_count(2) == 183
    assert scale_count(40) == 50020


def test_rate_points():
    assert rate_points([38, 19, 53, 38]) == 53
    assert rate_points([50, 41, 59]) == 59
