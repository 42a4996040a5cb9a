"""Traffic that measures itself: frerlab's generator/receiver (`gen`), drivers and parsers for
iperf3, sockperf and mausezahn (`tools`), `import` of old result files, all producing one
result record type (`record.TrafficRecord`)."""
