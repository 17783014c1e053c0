from count_points import sum_count, total_points


def test_sum_count():
    assert sum_count(20, 4) == 1027
    assert sum_count(41, 28) == 2053


def test_total_points():
    assert total_points(28, 38) == 38
    assert total_points(16, 56) == 38
