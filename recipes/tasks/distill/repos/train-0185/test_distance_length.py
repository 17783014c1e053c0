from distance_length import find_distance, scale_length


def test_find_distance():
    assert find_distance(4, 2) == 2
    assert find_distance(61, 52) == 9


def test_scale_length():
    assert scale_length(20, 8) == 12
    assert scale_length(7, 47) == 46
