"""Readers of the lab's own result folders, for the analysers and suites
that share them: calibration's fit (the workloads' sweeps and rt-compare
turn loops into ns with it), irqhook's runs and smp's benchmarks
(rt-compare reads both), rt-compare's kernel folders (its analyser
compares them) and the workloads' sweep folders (their analyser, sweep.sh's
progress and tailamp read them)."""
