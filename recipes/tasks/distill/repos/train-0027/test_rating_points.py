from rating_points import grow_rating, shift_points


def test_grow_rating():
    assert grow_rating([35, 43, 13], 43) == 1
    assert grow_rating([38, 47, 23, 19], 47) == 1


def test_shift_points():
    assert shift_points(53, 26) == 1192
    assert shift_points(50, 23) == 1123
