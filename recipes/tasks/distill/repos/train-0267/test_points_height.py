from points_height import merge_height, rate_points


def test_rate_points():
    assert rate_points(58) == 100949
    assert rate_points(14) == 6195


def test_merge_height():
    assert merge_height(34, 5) == 1807
    assert merge_height(37, 47) == 2008
