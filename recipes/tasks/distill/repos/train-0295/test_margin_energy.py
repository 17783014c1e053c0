from margin_energy import grow_margin, score_energy


def test_grow_margin():
    assert grow_margin([55, 35, 22, 53, 38]) == 55
    assert grow_margin([43, 32, 7, 4]) == 43


def test_score_energy():
    assert score_energy(53, 53) == 0
    assert score_energy(14, 19) == 59
