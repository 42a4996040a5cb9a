"""The simulator against the testbed: `frerlab crosscheck SCENARIO` runs one scenario in both
worlds and compares their metrics (frerlab.crosscheck.run; `cli` adds the verb).
docs/crosscheck.md."""
