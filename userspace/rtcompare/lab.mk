# Stock versus PREEMPT_RT (userspace/rtcompare), and the lab kernels as
# Debian packages for a real machine.

## rt-compare [RT_ARGS='-- --long']: build stock and rt if needed, the same suite on each, one comparison
rt-compare: setup
	userspace/rtcompare/run.sh $(RT_ARGS)

## deb [VARIANT=stock|rt]: the lab kernel as installable .deb packages (bindeb-pkg) in build/deb/
deb:
	scripts/build-kernel.sh --deb

.PHONY: rt-compare deb
