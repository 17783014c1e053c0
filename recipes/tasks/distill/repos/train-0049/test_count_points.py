from count_points import pick_count, total_points


def test_pick_count():
    assert pick_count([2, 38, 29]) == 38
    assert pick_count([29, 59, 50]) == 59


def test_total_points():
    assert total_points(41) == 21525
    assert total_points(22) == 6325
