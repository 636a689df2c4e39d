"""Pure parsers of benchmark tool output."""
