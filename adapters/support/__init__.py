"""What several adapters share (not adapters themselves: `--impl adapter:all` lists only the modules directly in adapters/)."""
