from length import fold_length, score_length


def test_fold_length():
    assert fold_length([50, 20, 49, 41, 16], 50) == 1
    assert fold_length([2, 26, 43, 14], 43) == 1


def test_score_length():
    assert score_length(17, 46) == 165
    assert score_length(11, 11) == 88
