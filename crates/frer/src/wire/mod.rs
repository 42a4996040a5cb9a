//! Wire formats: Ethernet/VLAN framing and the 802.1CB R-TAG (filled in by the codec work).
