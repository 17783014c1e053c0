from fizzbuzz import fizzbuzz


def test_numbers():
    assert fizzbuzz(1) == "1"
    assert fizzbuzz(3) == "Fizz"
    assert fizzbuzz(5) == "Buzz"


def test_fifteen():
    assert fizzbuzz(15) == "FizzBuzz"
