from distance_volume import pick_distance, trim_volume


def test_pick_distance():
    assert pick_distance(10, 43) == 245
    assert pick_distance(40, 31) == 1097


def test_trim_volume():
    assert trim_volume(49, 31) == 18
    assert trim_volume(41, 58) == 49
