from width_energy import adjust_width, rate_energy


def test_adjust_width():
    assert adjust_width([47, 44, 17]) == 47
    assert adjust_width([32, 14, 31, 50, 49]) == 50


def test_rate_energy():
    assert rate_energy(53, 7) == 2180
    assert rate_energy(52, 59) == 2191
