"""One node's FRER configuration in other forms: IEEE YANG instance data (RFC 7951 JSON after
ieee802-dot1cb-stream-identification and ieee802-dot1cb-frer, `yang`) and the command script of
the Microchip LAN966x Linux BSP (`lan966x`), both ways, from and into the data plane's YAML
vocabulary (frerlab.dataplane.config). `cli` adds `frerlab config export|import|validate`;
docs/config.md says what maps to what."""
