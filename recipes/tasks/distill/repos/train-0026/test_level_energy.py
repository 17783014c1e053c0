from level_energy import merge_level, shift_energy


def test_merge_level():
    assert merge_level(25) == 19175
    assert merge_level(13) == 5369


def test_shift_energy():
    assert shift_energy(35, 50) == 1660
    assert shift_energy(49, 52) == 2306
