"""FRER networks described once: a topology file (nodes, links, streams with their member
paths and where FRER acts, faults over time) resolved into each stream's stages and routes
(plan) and each node's FRER functions (nodes), its reliability predicted (analyse), its
scenario run in the simulator (sim), both over link loss (sweep). `frerlab net` is the command
(cli)."""
