from length_energy import clip_energy, shift_length


def test_shift_length():
    assert shift_length([31, 37, 29]) == 37
    assert shift_length([7, 22, 56, 58, 37]) == 58


def test_clip_energy():
    assert clip_energy(2, 58) == 46
    assert clip_energy(25, 13) == 12
