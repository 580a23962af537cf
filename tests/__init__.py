"""The test suite (a package, so a `tests` package installed by a dependency never shadows it)."""
