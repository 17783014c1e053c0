from width_salary import mix_width, scale_salary


def test_mix_width():
    assert mix_width([40, 14, 14, 37, 26], 40) == 1
    assert mix_width([46, 4, 56, 17, 53], 46) == 3


def test_scale_salary():
    assert scale_salary([55, 22, 43]) == 55
    assert scale_salary([52, 28, 43, 19]) == 52
