from volume_budget import pick_budget, pick_volume


def test_pick_volume():
    assert pick_volume(25, 25) == 0
    assert pick_volume(35, 61) == 7


def test_pick_budget():
    assert pick_budget([19, 56, 25, 19, 25]) == 56
    assert pick_budget([11, 25, 5, 52, 47]) == 52
