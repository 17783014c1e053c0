from height import bound_height, fold_height


def test_bound_height():
    assert bound_height(35) == 6300
    assert bound_height(4) == 100


def test_fold_height():
    assert fold_height([56, 56, 13, 49, 59]) == 59
    assert fold_height([7, 28, 61]) == 61
