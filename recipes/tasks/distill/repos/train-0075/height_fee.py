def clip_fee(step, factor, base):
    if step < factor:
        return factor
    if step > base:
        return base
    return step


def adjust_height(factor, amount):
    if factor >= amount:
        return factor + amount
    return 25
