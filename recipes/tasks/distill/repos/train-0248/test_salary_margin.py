from salary_margin import adjust_salary, clip_margin


def test_adjust_salary():
    assert adjust_salary(5, 55) == -22
    assert adjust_salary(31, 29) == 56


def test_clip_margin():
    assert clip_margin(5) == 255
    assert clip_margin(61) == 32147
