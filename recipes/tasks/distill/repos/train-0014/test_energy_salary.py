from energy_salary import sum_energy, total_salary


def test_sum_energy():
    assert sum_energy([46, 52, 4]) == 52
    assert sum_energy([59, 43, 32, 14, 5]) == 59


def test_total_salary():
    assert total_salary(4) == 590
    assert total_salary(23) == 16284
