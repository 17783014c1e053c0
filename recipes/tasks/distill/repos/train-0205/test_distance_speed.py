from distance_speed import shift_distance, total_speed


def test_shift_distance():
    assert shift_distance([46, 43, 46]) == 46
    assert shift_distance([16, 58, 2, 20]) == 58


def test_total_speed():
    assert total_speed(52, 47) == 2751
    assert total_speed(41, 58) == 2190
