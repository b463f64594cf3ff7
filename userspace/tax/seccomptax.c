// SPDX-License-Identifier: GPL-2.0
/*
 * seccomptax - run a command under a container runtime's kind of seccomp
 * allowlist
 *
 * Allows every call of the 64-bit table that libseccomp knows but the
 * ones container runtimes refuse by default (mount, bpf, ptrace, module
 * and key calls ...), refuses the rest with EPERM, and executes the
 * command under that filter, which its children inherit.  Three forms:
 *   linear  libseccomp's default: one comparison after another, so a
 *           call's cost grows with its place in the filter
 *   tree    the same calls as a binary tree (SCMP_FLTATR_CTL_OPTIMIZE 2)
 *   args    the tree, and clone, personality and socket allowed only
 *           with some arguments, as the runtimes do
 *   none    no allowlist (with --no-cache: what a filter costs at all)
 * The kernel's cache of always-allowed calls (5.11 and later) answers a
 * call without running the filters when no filter's answer for that
 * number can depend on its arguments: linear and tree are then the same
 * for most calls.  --no-cache stacks a filter that reads an argument and
 * allows everything, so that every filter runs on every call, as before
 * the cache (NOTES.md, "seccomp").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define PROG "seccomptax"
#define NR_SCAN 1024

/* What the runtimes' default profiles refuse (the allowlist leaves out). */
static const char *const refused[] = {
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
	"delete_module", "finit_module", "get_kernel_syms", "get_mempolicy",
	"init_module", "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load",
	"keyctl", "lookup_dcookie", "mbind", "mount", "move_pages", "name_to_handle_at",
	"nfsservctl", "open_by_handle_at", "perf_event_open", "pivot_root",
	"process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
	"reboot", "request_key", "set_mempolicy", "setns", "settimeofday", "swapon",
	"swapoff", "sysfs", "_sysctl", "umount2", "unshare", "uselib", "userfaultfd",
	"ustat", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
	"mount_setattr", "quotactl_fd", "vm86", "vm86old",
	NULL,
};

/* The calls the args form allows only with some arguments. */
static const char *const checked[] = { "clone", "personality", "socket", NULL };

/* The namespace flags clone may not have in the args form. */
#define CLONE_NAMESPACES (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
			  CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)

static const char *const forms[] = { "linear", "tree", "args", "none", NULL };
enum { LINEAR, TREE, ARGS, NONE };

static struct {
	int form;
	int no_cache;
	int quiet;
} o = { .form = LINEAR };

static const struct lab_opt options[] = {
	{ .name = "filter", .letter = 'f', .kind = LAB_OPT_CHOICE, .value = &o.form,
	  .arg = "FORM", .choices = forms,
	  .help = "linear, tree (a binary tree of the same calls) or args (the\n"
		  "tree, clone, personality and socket with argument checks)\n"
		  "or none (no allowlist)" },
	{ .name = "no-cache", .kind = LAB_OPT_FLAG, .value = &o.no_cache,
	  .help = "stack a filter that reads an argument, so that the kernel's\n"
		  "cache of always-allowed calls answers none" },
	{ .name = "quiet", .letter = 'q', .kind = LAB_OPT_FLAG, .value = &o.quiet,
	  .help = "do not say how many calls the filter allows" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: seccomptax [options] -- COMMAND [ARG...]\n"
		"\n"
		"Run COMMAND under a seccomp allowlist of the size container runtimes\n"
		"install: every 64-bit call but the ones they refuse, which fail with\n"
		"EPERM.  Its children inherit the filter.",
	.example = "seccomptax -f tree -- callcost -s 39,110",
	.opts = options,
};

static int listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return 1;
	return 0;
}

static void fail(const char *what, int ret)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(-ret));
	exit(1);
}

/* The args form's rules for @name (@nr); 0 or a negative errno. */
static int add_checked(scmp_filter_ctx ctx, const char *name, int nr)
{
	static const unsigned long personas[] = { 0, 0x8, 0x20000, 0x20008, 0xffffffff };
	int ret = 0;

	if (!strcmp(name, "clone"))
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
					SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NAMESPACES, 0));
	if (!strcmp(name, "socket"))
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
					SCMP_A0(SCMP_CMP_NE, AF_VSOCK));
	for (size_t i = 0; !ret && i < sizeof(personas) / sizeof(personas[0]); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
				       SCMP_A0(SCMP_CMP_EQ, personas[i]));
	return ret;
}

/*
 * A filter that reads the sixth argument and allows the call: its answer
 * may depend on the arguments, so the kernel caches no call's answer and
 * runs every filter on every call.
 */
static void load_uncacheable(void)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[5])),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
		fprintf(stderr, PROG ": the uncacheable filter: %s\n", strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int first = lab_opts_parse(&tool, argc, argv, 1);
	scmp_filter_ctx ctx;
	int allowed = 0, ret;

	if (first >= argc) {
		fprintf(stderr, PROG ": no command (try --help)\n");
		return 2;
	}
	if (o.form == NONE) {
		if (!o.no_cache) {
			fprintf(stderr, PROG ": --filter none installs nothing without --no-cache\n");
			return 2;
		}
		goto load;
	}
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx) {
		fprintf(stderr, PROG ": seccomp_init failed\n");
		return 1;
	}
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, o.form == LINEAR ? 1 : 2);
	if (ret)
		fail("seccomp_attr_set(SCMP_FLTATR_CTL_OPTIMIZE)", ret);
	for (int nr = 0; nr < NR_SCAN; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);

		if (!name)
			continue;
		if (!listed(refused, name)) {
			if (o.form == ARGS && listed(checked, name))
				ret = add_checked(ctx, name, nr);
			else
				ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
			if (ret)
				fail(name, ret);
			allowed++;
		}
		free(name);
	}
	ret = seccomp_load(ctx);
	if (ret)
		fail("seccomp_load", ret);
	seccomp_release(ctx);
load:
	if (o.no_cache)
		load_uncacheable();
	if (!o.quiet)
		fprintf(stderr, PROG ": %s filter allowing %d calls%s\n", forms[o.form], allowed,
			o.no_cache ? ", no call cached" : "");
	execvp(argv[first], argv + first);
	fprintf(stderr, PROG ": %s: %s\n", argv[first], strerror(errno));
	return 127;
}
