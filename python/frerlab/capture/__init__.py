"""Capture verification: `frerlab capture` records a testbed's ports (frerlab.capture.record),
`frerlab verify` checks pcap and pcapng files per stream and per capture point
(frerlab.capture.verify, reading them with frerlab.capture.reader). docs/verify.md."""
