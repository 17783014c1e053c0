from distance_fee import grow_distance, mix_fee


def test_grow_distance():
    assert grow_distance(49, 11) == 38
    assert grow_distance(35, 38) == 26


def test_mix_fee():
    assert mix_fee(23, 2) == 21
    assert mix_fee(34, 28) == 6
