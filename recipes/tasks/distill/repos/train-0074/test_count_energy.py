from count_energy import make_energy, trim_count


def test_trim_count():
    assert trim_count([37, 34, 32, 4]) == 37
    assert trim_count([55, 23, 46]) == 55


def test_make_energy():
    assert make_energy([56, 32, 61, 23]) == 61
    assert make_energy([10, 2, 8, 44]) == 44
