#!/usr/bin/env python3
"""Runs lit on one test file for ctest.

ctest starts many lit processes on the same build/test tree at once, and each
one reads and rewrites build/test/.lit_test_times.txt; one process can read the
file while another has just truncated it, and lit then fails before running a
test. The timing file only orders tests inside one lit run, so these runs skip
it. Usage: lit-one.py <lit.py> <lit arguments...>
"""
import os
import sys

lit_script = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(lit_script)))
sys.argv = [lit_script] + sys.argv[2:]

import lit.Test  # noqa: E402
import lit.main  # noqa: E402

lit.Test.read_test_times = lambda suite: {}
lit.main.record_test_times = lambda tests, lit_config: None
lit.main.main()
