# The calibration: loop count -> added system-call latency (userspace/calibrate).

## calibrate [LOOPS=0:700:50]: boot, measure into results/calibrate-<time>/, analyse here
calibrate: setup
	$(VM) -- userspace/calibrate/run.sh $(if $(LOOPS),-l $(LOOPS))
	$(PY) userspace/calibrate/analyse.py $(RESULTS)/latest-calibrate

.PHONY: calibrate
