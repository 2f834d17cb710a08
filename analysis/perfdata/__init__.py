"""The perf.data (PERFILE2) format: header, attrs, records, samples, process maps."""
