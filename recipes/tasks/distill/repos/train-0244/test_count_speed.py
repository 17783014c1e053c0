from count_speed import get_speed, pick_count


def test_pick_count():
    assert pick_count(11, 29) == 328
    assert pick_count(2, 59) == 37


def test_get_speed():
    assert get_speed(52, 53) == 885
    assert get_speed(13, 19) == 227
