# Two runs, or two sets of runs, of one experiment side by side (userspace/compare).

## compare A=DIR B=DIR [COMPARE_ARGS=--band 1]: a verdict a figure (A, B: one folder or several, space-separated)
compare: venv userspace
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "make compare: give A=DIR and B=DIR (each one folder or several)" >&2; exit 2; }
	@$(VENV)/bin/compare -a $(A) -b $(B) $(COMPARE_ARGS) || { s=$$?; \
		echo "make compare: exit status $$s (1: a figure got worse in B, 2: refused, inconclusive or nondeterministic)" >&2; exit $$s; }

## ab EXP=calibrate|kbuild|grep|apache|redis|cmd [A='...'] B='APPEND=preempt=full' [N=2] [AB_ARGS='--clock host']:
##   the experiment N times a side (VARIANT=, APPEND=, ARGS= each), boots in a recorded random order, then compare
ab: setup
	@[ -n "$(EXP)" ] || { echo "make ab: give EXP=calibrate (or a workload) and B='APPEND=...'" >&2; exit 2; }
	@$(PY) userspace/compare/ab.py $(EXP) -A "$(A)" -B "$(B)" $(if $(N),-n $(N)) $(AB_ARGS) || { s=$$?; \
		echo "make ab: exit status $$s (1: a figure got worse in B, 2: refused, failed, inconclusive or nondeterministic)" >&2; exit $$s; }

.PHONY: compare ab
