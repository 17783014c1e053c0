from energy_speed import score_energy, trim_speed


def test_score_energy():
    assert score_energy(38, 31) == 1424
    assert score_energy(23, 13) == 872


def test_trim_speed():
    assert trim_speed([11, 58, 53]) == 58
    assert trim_speed([44, 53, 23]) == 53
