from count_points import limit_points, shift_count


def test_shift_count():
    assert shift_count([37, 10, 8]) == 37
    assert shift_count([32, 32, 19, 5]) == 32


def test_limit_points():
    assert limit_points(8, 46, 55) == 46
    assert limit_points(50, 52, 58) == 52
