from energy_width import limit_energy, merge_width


def test_limit_energy():
    assert limit_energy([56, 10, 58, 20, 47]) == 58
    assert limit_energy([61, 19, 16, 7]) == 61


def test_merge_width():
    assert merge_width(23, 35) == 840
    assert merge_width(44, 28) == 1568
