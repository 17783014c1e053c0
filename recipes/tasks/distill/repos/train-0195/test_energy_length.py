from energy_length import merge_length, shift_energy


def test_shift_energy():
    assert shift_energy(52, 26, 34) == 34
    assert shift_energy(11, 22, 23) == 22


def test_merge_length():
    assert merge_length(4) == 470
    assert merge_length(34) == 27965
