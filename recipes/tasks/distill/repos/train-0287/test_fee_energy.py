from fee_energy import make_fee, scale_energy


def test_make_fee():
    assert make_fee([20, 19, 44, 61], 44) == 2
    assert make_fee([10, 43, 20, 56], 56) == 1


def test_scale_energy():
    assert scale_energy(35, 26, 44) == 35
    assert scale_energy(56, 4, 25) == 25
