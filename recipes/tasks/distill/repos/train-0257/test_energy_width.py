from energy_width import mix_energy, trim_width


def test_mix_energy():
    assert mix_energy([40, 20, 26, 59], 20) == 4
    assert mix_energy([47, 49, 20, 58, 47], 58) == 1


def test_trim_width():
    assert trim_width(17, 17) == 0
    assert trim_width(29, 58) == 14
