from rating_count import fold_rating, scale_count


def test_fold_rating():
    assert fold_rating(52, 34) == 18
    assert fold_rating(59, 59) == 0


def test_scale_count():
    assert scale_count([11, 14, 19, 28, 14]) == 28
    assert scale_count([7, 26, 38, 50, 46]) == 50
