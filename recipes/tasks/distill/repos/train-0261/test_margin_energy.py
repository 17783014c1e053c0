from margin_energy import bound_margin, clip_energy


def test_bound_margin():
    assert bound_margin(31, 56) == 32
    assert bound_margin(22, 8) == 14


def test_clip_energy():
    assert clip_energy(20) == 1470
    assert clip_energy(10) == 385
