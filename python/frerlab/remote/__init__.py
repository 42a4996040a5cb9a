"""Real hosts over SSH (issue 17): the hosts file, SSH sessions to every host at once, and the
pre-flight checks recorded before a measurement."""
