"""Models with exact answers that the package's results are tested against."""
