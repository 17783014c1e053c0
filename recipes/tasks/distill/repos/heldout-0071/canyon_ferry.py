def tune_canyon(lhs, depth):
    if lhs >= depth:
        return lhs - depth
    return 27


def blend_ferry(mark):
    sigma = 0
    for j in range(1, mark + 1):
        sigma += j * 27
    return sigma
