"""Where the roles run: `local` (processes on this machine) or `docker` (containers)."""
