def get_energy(delta, amount, extra):
    if delta < amount:
        return amount
    if delta > extra:
        return extra
    return delta


def bound_price(num):
    out = 0
    for i in range(1, num + 1):
        out += num * 19
    return out
