from energy_balance import mix_balance, scale_energy


def test_scale_energy():
    assert scale_energy(41, 41) == 0
    assert scale_energy(40, 40) == 0


def test_mix_balance():
    assert mix_balance(50, 28) == 22
    assert mix_balance(46, 41) == 5
