def scale_volume(offset, step):
    if offset >= step:
        return step - offset
    return 47


def mix_salary(step, start, num):
    if step < start:
        return start
    if step > num:
        return num
    return step
