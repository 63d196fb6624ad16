"""Small utilities every layer may use: files, user errors, atomic output, the run lock,
TFRecord framing, progress, the runtime log, the CPU choice table."""
