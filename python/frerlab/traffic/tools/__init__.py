"""Drivers for the familiar tools (iperf3, sockperf, mausezahn): each checks its tool is
installed, builds the command line with the sizes and rates right, runs it, keeps the raw
output, and parses it into `TrafficRecord`s."""
