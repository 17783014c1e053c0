from height_budget import bound_height, total_budget


def test_bound_height():
    assert bound_height([19, 49, 50, 41], 19) == 4
    assert bound_height([16, 20, 4, 58], 4) == 4


def test_total_budget():
    assert total_budget(37, 31) == 6
    assert total_budget(5, 41) == 8
