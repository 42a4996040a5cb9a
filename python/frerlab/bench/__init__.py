"""Benchmark methodology that does not depend on how traffic is made: statistics of figures
(`stats`), the RFC 2544 26.1 throughput searches over a trial callback (`search`: the seeds'
binary search and an RFC 9971 MLRsearch-style search) and the known-truth devices under test
they are checked on (`dut`)."""
