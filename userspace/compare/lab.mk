# Two runs, or two sets of runs, of one experiment side by side (userspace/compare).
# The recipes exec the tool: what it prints is all it says (a refusal is
# one line); GNU make then adds its own "make: *** [...] Error N" with the
# tool's status N, and itself exits 2 whenever N is not 0 (make has no
# other failure status): 'lab compare' and 'lab ab' give 1 and 2 apart.

## compare A=DIR B=DIR [COMPARE_ARGS=--band 1]: a verdict a figure (A, B: one folder or several, space-separated)
compare: venv userspace
	@exec $(LAB) compare $(if $(A),-a $(A)) $(if $(B),-b $(B)) $(COMPARE_ARGS)

## ab EXP=calibrate|kbuild|grep|apache|redis|cmd [A='...'] B='APPEND=preempt=full' [N=2] [AB_ARGS='--clock host']:
##   the experiment N times a side (VARIANT=, APPEND=, ARGS= each), boots in a new random order (--seed repeats one), then compare
ab: setup
	@exec $(LAB) ab $(or $(EXP),'(give EXP=calibrate or a workload)') -A "$(A)" -B "$(B)" $(if $(N),-n $(N)) $(AB_ARGS)

.PHONY: compare ab
