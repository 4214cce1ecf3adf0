import pytest

from envscaler_core.metrics import bootstrap_ci, pass_hat_k, pass_hat_k_table

pytestmark = pytest.mark.unit


def test_pass_hat_k_known_values():
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(2, 4, 1) == 0.5
    assert pass_hat_k(2, 4, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(1, 4, 2) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(1, 2, 3)


def test_pass_hat_k_table_averages_tasks():
    table = pass_hat_k_table({"a": (4, 4), "b": (2, 4), "c": (0, 4)})
    assert table[1] == pytest.approx((1 + 0.5 + 0) / 3)
    assert table[2] == pytest.approx((1 + 1 / 6) / 3)
    assert list(table) == [1, 2, 3, 4]


def test_bootstrap_interval_contains_mean_and_shrinks_with_n():
    small = bootstrap_ci([0, 1] * 5)
    large = bootstrap_ci([0, 1] * 200)
    assert small[0] <= 0.5 <= small[1] and large[0] <= 0.5 <= large[1]
    assert (large[1] - large[0]) < (small[1] - small[0])
    assert bootstrap_ci([1.0] * 10) == (1.0, 1.0)
