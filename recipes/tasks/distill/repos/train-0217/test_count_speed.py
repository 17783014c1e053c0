from count_speed import fold_count, trim_speed


def test_fold_count():
    assert fold_count(50) == 63750
    assert fold_count(43) == 47300


def test_trim_speed():
    assert trim_speed(22, 20) == 2
    assert trim_speed(14, 8) == 6
