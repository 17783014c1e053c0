from energy_fee import fold_fee, score_energy


def test_score_energy():
    assert score_energy([59, 49, 59]) == 59
    assert score_energy([58, 19, 28]) == 58


def test_fold_fee():
    assert fold_fee([29, 32, 35]) == 35
    assert fold_fee([53, 55, 61]) == 61
