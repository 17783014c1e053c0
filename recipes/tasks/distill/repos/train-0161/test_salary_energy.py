from salary_energy import shift_energy, sum_salary


def test_sum_salary():
    assert sum_salary(23) == 5520
    assert sum_salary(43) == 18920


def test_shift_energy():
    assert shift_energy(16, 47) == 40
    assert shift_energy(19, 14) == 5
