from price_energy import find_energy, fold_price


def test_fold_price():
    assert fold_price([28, 23, 46, 44, 53], 28) == 4
    assert fold_price([46, 56, 25, 52, 19], 46) == 3


def test_find_energy():
    assert find_energy([50, 16, 11, 43, 20]) == 50
    assert find_energy([47, 44, 22, 47, 5]) == 47
