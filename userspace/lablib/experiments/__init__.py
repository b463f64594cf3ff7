"""Readers shared by more than one experiment's analyser: calibration's
fit (the workloads' sweeps and rt-compare turn loops into ns with it),
irqhook's runs and smp's benchmarks (rt-compare reads both)."""
