"""FRER under attack: a device on one member path of the testbed that forges, replays, strips
or babbles frames of a stream while it flows, and the harm measured (docs/security.md).

spec: the attacks as data (a pydantic model per kind, the named attacks of attacks.yaml);
frames: the frames an attacker makes from the genuine ones it records; injector: the process
in the path's namespace that records and sends them; run: one attack on a testbed with a
measured stream, raw results first, then the harm; cli: `frerlab attack run|list`.
"""
