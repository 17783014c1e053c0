from length_count import grow_length, pick_count


def test_grow_length():
    assert grow_length([17, 2, 26], 26) == 1
    assert grow_length([20, 34, 16, 26, 58], 34) == 2


def test_pick_count():
    assert pick_count(56, 41) == 15
    assert pick_count(5, 61) == 46
