"""core.stats against independent references (statsmodels)."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from core.stats import wilson, wilson_percent


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 7), (3, 7), (7, 7), (50, 100), (1, 1000)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    low, high = wilson(k, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert float(low) == pytest.approx(ref_low, abs=1e-12)
    assert float(high) == pytest.approx(ref_high, abs=1e-12)


def test_wilson_is_vectorised_and_nan_without_items() -> None:
    low, high = wilson_percent([1, 0, 5], [4, 0, 5])
    ref_low, ref_high = proportion_confint(1, 4, alpha=0.05, method="wilson")
    assert low[0] == pytest.approx(ref_low * 100)
    assert high[0] == pytest.approx(ref_high * 100)
    assert np.isnan(low[1]) and np.isnan(high[1])
    assert high[2] == pytest.approx(100.0)
