"""Tests of the repository's ``benchmarks`` package.  (A folder named ``benchmarks``
here would shadow that package whenever ``tests`` is on ``sys.path``.)"""
