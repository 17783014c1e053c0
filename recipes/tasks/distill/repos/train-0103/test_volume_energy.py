from volume_energy import scale_energy, total_volume


def test_total_volume():
    assert total_volume(11, 2) == 9
    assert total_volume(20, 17) == 3


def test_scale_energy():
    assert scale_energy(13, 37) == 336
    assert scale_energy(34, 34) == 816
