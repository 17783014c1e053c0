from rating_count import fold_rating, merge_count


def test_fold_rating():
    assert fold_rating([29, 38, 19], 38) == 1
    assert fold_rating([19, 17, 56, 35, 8], 56) == 1


def test_merge_count():
    assert merge_count(2, 16) == 43
    assert merge_count(53, 7) == 46
