from rating_energy import adjust_energy, sum_rating


def test_sum_rating():
    assert sum_rating([52, 2, 4, 7, 2]) == 52
    assert sum_rating([56, 37, 20, 25, 11]) == 56


def test_adjust_energy():
    assert adjust_energy(5, 44) == 56
    assert adjust_energy(11, 37) == 56
