from rating_margin import fold_margin, scale_rating


def test_scale_rating():
    assert scale_rating(56, 43) == 2955
    assert scale_rating(41, 26) == 2158


def test_fold_margin():
    assert fold_margin(19) == 7030
    assert fold_margin(25) == 12025
