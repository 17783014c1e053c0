def score_count(step, amount, delta):
    if step < amount:
        return amount
    if step > delta:
        return delta
    return step


def shift_price(delta, step, amount):
    if delta > step:
        return step
    if delta > amount:
        return amount
    return delta
