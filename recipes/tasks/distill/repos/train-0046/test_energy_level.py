from energy_level import clip_energy, make_level


def test_clip_energy():
    assert clip_energy(50, 58) == 38
    assert clip_energy(44, 35) == 9


def test_make_level():
    assert make_level(34, 41) == 1333
    assert make_level(8, 16) == 320
