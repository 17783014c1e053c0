from height_points import get_points, grow_height


def test_grow_height():
    assert grow_height(55) == 33880
    assert grow_height(41) == 18942


def test_get_points():
    assert get_points(2) == 78
    assert get_points(40) == 21320
