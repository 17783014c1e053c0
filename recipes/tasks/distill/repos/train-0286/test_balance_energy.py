from balance_energy import make_energy, scale_balance


def test_scale_balance():
    assert scale_balance(2, 52) == 43
    assert scale_balance(58, 28) == 30


def test_make_energy():
    assert make_energy(28, 22) == 750
    assert make_energy(31, 23) == 829
