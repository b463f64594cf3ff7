# Tail amplification: a rare slow call, a common slow request (userspace/tailamp).

## tailamp [TAILAMP_N=5000]: Apache's reply-time tail against the share of delayed calls
TAILAMP_N ?= 5000
tailamp: setup
	$(call lab_run,tailamp,-n $(TAILAMP_N))

.PHONY: tailamp
